package mesh

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// This file holds helpers for tests of mesh and of the packages above it:
// an in-process Cluster on a MemNetwork and a RecordingHandler.

// Delivery is one delta a RecordingHandler received.
type Delivery struct {
	From    string
	Key     string
	Version uint64
	Data    []byte
	At      time.Time
}

// Merge is one push/pull state a RecordingHandler received.
type Merge struct {
	From string
	Blob []byte
}

// RecordingHandler is a Handler that records everything mesh delivers. Its
// LocalState is whatever SetState last set.
type RecordingHandler struct {
	// OnDelta, if set before the mesh starts, is called on every delivery.
	OnDelta func(d Delivery)

	mu     sync.Mutex
	state  []byte
	deltas []Delivery
	merges []Merge
	events []MemberEvent
}

var _ Handler = (*RecordingHandler)(nil)

// SetState sets the blob LocalState returns.
func (h *RecordingHandler) SetState(b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state = bytes.Clone(b)
}

func (h *RecordingHandler) LocalState() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return bytes.Clone(h.state)
}

func (h *RecordingHandler) MergeRemoteState(from string, blob []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.merges = append(h.merges, Merge{From: from, Blob: blob})
}

func (h *RecordingHandler) ApplyDelta(from, key string, version uint64, delta []byte) {
	d := Delivery{From: from, Key: key, Version: version, Data: delta, At: time.Now()}
	h.mu.Lock()
	h.deltas = append(h.deltas, d)
	f := h.OnDelta
	h.mu.Unlock()
	if f != nil {
		f(d)
	}
}

func (h *RecordingHandler) MemberEvent(ev MemberEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

// Deltas returns the deliveries so far.
func (h *RecordingHandler) Deltas() []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Delivery(nil), h.deltas...)
}

// Latest returns the newest version delivered for key.
func (h *RecordingHandler) Latest(key string) (Delivery, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var best Delivery
	found := false
	for _, d := range h.deltas {
		if d.Key == key && (!found || d.Version > best.Version) {
			best, found = d, true
		}
	}
	return best, found
}

// Merges returns the push/pull states received so far.
func (h *RecordingHandler) Merges() []Merge {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Merge(nil), h.merges...)
}

// Events returns the member events delivered so far.
func (h *RecordingHandler) Events() []MemberEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]MemberEvent(nil), h.events...)
}

// Cluster is n meshes on one MemNetwork, built by MakeCluster.
type Cluster struct {
	t        testing.TB
	Net      *MemNetwork
	Nodes    []*Mesh
	Handlers []*RecordingHandler
	Configs  []Config
}

// MakeCluster starts n meshes named node0…node{n-1} with TestConfig on a
// MemNetwork, every node seeded with node0, and waits until each sees n
// alive members. cfg, if not nil, adjusts each node's Config before New.
// The cluster is shut down when the test ends. Set HARN_MESH_DEBUG=1 to see
// the logs.
func MakeCluster(t testing.TB, n int, cfg func(i int, c *Config)) *Cluster {
	t.Helper()
	c := &Cluster{t: t, Net: &MemNetwork{}}
	t.Cleanup(c.Close)
	var seed string
	for i := 0; i < n; i++ {
		h := &RecordingHandler{}
		conf := TestConfig()
		conf.Name = fmt.Sprintf("node%d", i)
		tr := c.Net.NewTransport()
		conf.Transport = tr
		conf.Handler = h
		conf.Logger = testLogger()
		if i == 0 {
			seed = tr.Addr()
		} else {
			conf.Join = []string{seed}
		}
		if cfg != nil {
			cfg(i, &conf)
		}
		m, err := New(conf)
		if err != nil {
			t.Fatalf("node%d: %v", i, err)
		}
		if err := m.Start(); err != nil {
			t.Fatalf("node%d: %v", i, err)
		}
		c.Nodes = append(c.Nodes, m)
		c.Handlers = append(c.Handlers, h)
		c.Configs = append(c.Configs, conf)
	}
	WaitFor(t, 15*time.Second, fmt.Sprintf("%d nodes alive everywhere", n), func() bool {
		for _, m := range c.Nodes {
			if m.NumAlive() != n {
				return false
			}
		}
		return true
	})
	return c
}

func testLogger() *slog.Logger {
	if os.Getenv("HARN_MESH_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return TestConfig().Logger
}

// Members is node i's view of the mesh.
func (c *Cluster) Members(i int) []Member { return c.Nodes[i].Members() }

// Member is node i's view of the member named name.
func (c *Cluster) Member(i int, name string) (Member, bool) {
	for _, mb := range c.Nodes[i].Members() {
		if mb.Name == name {
			return mb, true
		}
	}
	return Member{}, false
}

// Addr is node i's address on the network.
func (c *Cluster) Addr(i int) string { return c.Configs[i].Transport.(*MemTransport).Addr() }

// Partition splits the cluster into groups of node indexes that no longer
// reach each other.
func (c *Cluster) Partition(groups ...[]int) {
	var addrs [][]string
	for _, g := range groups {
		var as []string
		for _, i := range g {
			as = append(as, c.Addr(i))
		}
		addrs = append(addrs, as)
	}
	c.Net.Partition(addrs...)
}

// Heal removes every partition.
func (c *Cluster) Heal() { c.Net.Heal() }

// Restart shuts node i down (without leaving) and starts a new process of
// it: same name, same address unless adjust changes the transport, no seeds
// unless adjust sets them.
func (c *Cluster) Restart(i int, adjust func(c *Config)) *Mesh {
	c.t.Helper()
	if err := c.Nodes[i].Shutdown(); err != nil {
		c.t.Fatalf("node%d shutdown: %v", i, err)
	}
	conf := c.Configs[i]
	conf.Transport = c.Net.Listen(c.Addr(i))
	conf.Join = nil
	h := &RecordingHandler{}
	conf.Handler = h
	if adjust != nil {
		adjust(&conf)
	}
	m, err := New(conf)
	if err != nil {
		c.t.Fatalf("node%d: %v", i, err)
	}
	if err := m.Start(); err != nil {
		c.t.Fatalf("node%d: %v", i, err)
	}
	c.Nodes[i], c.Handlers[i], c.Configs[i] = m, h, conf
	return m
}

// Close shuts every node down; it is safe to call twice.
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	for _, m := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = m.Shutdown()
		}()
	}
	wg.Wait()
}

// WaitFor polls cond every 10 ms until it holds, or fails the test after
// timeout, saying what it waited for.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BareMesh is the comparison side of propagation benchmarks: n plain
// memberlist nodes on loopback UDP/TCP with memberlist.DefaultLANConfig,
// each with a TransmitLimitedQueue at memberlist's default RetransmitMult
// that re-queues a message the first time it sees it (the usual epidemic
// pattern, as serf does for user events). Build it with StartBareMesh.
type BareMesh struct {
	nodes     []*bareNode
	closeOnce sync.Once
}

// bareNode is plain memberlist with a TransmitLimitedQueue.
type bareNode struct {
	list atomic.Pointer[memberlist.Memberlist]
	q    *memberlist.TransmitLimitedQueue
	mu   sync.Mutex
	seen map[string]bool
	recv func(id string)
}

type bareBroadcast []byte

func (bb bareBroadcast) Invalidates(memberlist.Broadcast) bool { return false }
func (bb bareBroadcast) Message() []byte                       { return bb }
func (bb bareBroadcast) Finished()                             {}

func (d *bareNode) NodeMeta(int) []byte { return nil }
func (d *bareNode) NotifyMsg(b []byte) {
	id := string(b[:idLen(b)])
	d.mu.Lock()
	if d.seen[id] {
		d.mu.Unlock()
		return
	}
	d.seen[id] = true
	d.mu.Unlock()
	d.q.QueueBroadcast(bareBroadcast(append([]byte(nil), b...)))
	d.recv(id)
}
func (d *bareNode) GetBroadcasts(overhead, limit int) [][]byte {
	return d.q.GetBroadcasts(overhead, limit)
}
func (d *bareNode) LocalState(bool) []byte        { return nil }
func (d *bareNode) MergeRemoteState([]byte, bool) {}
func (d *bareNode) numNodes() int {
	if l := d.list.Load(); l != nil {
		return l.NumMembers()
	}
	return 1
}

// idLen: a bare message is the id, a zero byte, then padding.
func idLen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

// StartBareMesh starts n bare memberlist nodes named bare-0…bare-{n-1} on
// 127.0.0.1 (free ports), every node joining bare-0, and waits (30 s at
// most) until each sees n members. recv(node, id) is called the first time
// node receives the message id (never on the node that broadcast it). The
// mesh is closed when tb ends, or earlier by Close.
func StartBareMesh(tb testing.TB, n int, recv func(node int, id string)) *BareMesh {
	tb.Helper()
	bm := &BareMesh{}
	tb.Cleanup(bm.Close)
	for i := 0; i < n; i++ {
		mc := memberlist.DefaultLANConfig()
		mc.Name = fmt.Sprintf("bare-%d", i)
		mc.BindAddr = "127.0.0.1"
		mc.BindPort = 0
		mc.AdvertisePort = 0
		mc.LogOutput = io.Discard
		d := &bareNode{seen: make(map[string]bool)}
		d.q = &memberlist.TransmitLimitedQueue{NumNodes: d.numNodes, RetransmitMult: mc.RetransmitMult}
		idx := i
		d.recv = func(id string) { recv(idx, id) }
		mc.Delegate = d
		l, err := memberlist.Create(mc)
		if err != nil {
			tb.Fatal(err)
		}
		d.list.Store(l)
		bm.nodes = append(bm.nodes, d)
		if i > 0 {
			seed := bm.nodes[0].list.Load().LocalNode().Address()
			if _, err := l.Join([]string{seed}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	WaitFor(tb, 30*time.Second, "bare converged", func() bool {
		for _, d := range bm.nodes {
			if d.list.Load().NumMembers() != n {
				return false
			}
		}
		return true
	})
	return bm
}

// Broadcast queues, on node origin, the message id padded to size bytes
// (at least the id and a zero byte) for gossip to every other node.
func (bm *BareMesh) Broadcast(origin int, id string, size int) {
	d := bm.nodes[origin]
	msg := make([]byte, max(size, len(id)+1))
	copy(msg, id)
	d.mu.Lock()
	d.seen[id] = true
	d.mu.Unlock()
	d.q.QueueBroadcast(bareBroadcast(msg))
}

// Kill shuts node i down without leaving, as a crash would.
func (bm *BareMesh) Kill(i int) { _ = bm.nodes[i].list.Load().Shutdown() }

// NumMembers is how many members node i counts alive or suspect (itself
// included): memberlist's view, without the dead and the departed.
func (bm *BareMesh) NumMembers(i int) int { return bm.nodes[i].list.Load().NumMembers() }

// Close shuts every node down (without leaving); it is safe to call twice.
func (bm *BareMesh) Close() {
	bm.closeOnce.Do(func() {
		for _, d := range bm.nodes {
			_ = d.list.Load().Shutdown()
		}
	})
}

// PropTracker times one message's propagation in a benchmark: Start names
// the message and how many nodes other than its origin must get it, Mark
// records a node that got one, and the channel Start returned receives
// the time the last of them did.
type PropTracker struct {
	mu     sync.Mutex
	id     string
	origin int
	want   int
	got    map[int]bool
	done   chan time.Time
}

// Start tracks message id from origin until want other nodes have it.
func (p *PropTracker) Start(id string, origin, want int) <-chan time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.id, p.origin, p.want = id, origin, want
	p.got = make(map[int]bool)
	p.done = make(chan time.Time, 1)
	return p.done
}

// Mark records that node got message id (once per node; other ids and
// the origin are ignored).
func (p *PropTracker) Mark(node int, id string) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if id != p.id || node == p.origin || p.got[node] {
		return
	}
	p.got[node] = true
	if len(p.got) == p.want {
		p.done <- now
	}
}

// EncodeDeltaFrame builds a delta frame as a peer sends it, for tests that
// play a peer (a forger among them): unsigned when sign is nil, else
// signed with what sign returns for the signed message.
func EncodeDeltaFrame(origin, key string, version uint64, data []byte, sign func(msg []byte) ([]byte, error)) ([]byte, error) {
	body := encodeBody(origin, key, version, data)
	if sign == nil {
		return append([]byte{msgDelta}, body...), nil
	}
	sig, err := sign(signedMsg(deltaDomain, body))
	if err != nil {
		return nil, err
	}
	return signedFrame(sig, body), nil
}

// EncodeStateFrame builds a push/pull state frame as a peer sends it:
// unsigned when sign is nil, else with creds and signed with sign.
func EncodeStateFrame(origin string, blob, creds []byte, sign func(msg []byte) ([]byte, error)) ([]byte, error) {
	st := pushState{origin: origin, blob: blob}
	if sign == nil {
		return encodeState(st), nil
	}
	st.signed, st.creds = true, creds
	sig, err := sign(signedMsg(stateDomain, encodeStateBody(st)))
	if err != nil {
		return nil, err
	}
	st.sig = sig
	return encodeState(st), nil
}
