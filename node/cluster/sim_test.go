package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// The mesh simulation: n nodes in one process on mesh's in-memory network
// (MemNetwork), each with the presence path of a real node (a mesh.Mesh
// with LAN timers, node/gossip's publisher, table and handler, the digest
// cadence, and a digest pull made in process where a node calls the
// cluster gRPC), and the registry's servers (three raft stores on raft's
// in-memory transport) that every other node follows through its Mirror,
// as the watch does over gRPC. What it leaves out: gossip encryption and
// signatures (CPU, not bytes: a signature adds 80 bytes to a delta), TLS,
// and the ledger. It reports propagation, convergence after a partition
// heals, and the bytes each node sends per second.

// simNode is one node of the simulation.
type simNode struct {
	i      int
	name   string
	tr     *mesh.MemTransport
	m      *mesh.Mesh
	table  *gossip.Table
	pub    *gossip.Publisher
	mirror *raftstore.Mirror
	sim    *sim

	mu    sync.Mutex
	state presence.State
	gen   int
}

// sim is the simulated mesh.
type sim struct {
	tb      testing.TB
	net     *mesh.MemNetwork
	nodes   []*simNode
	servers *raftstore.Cluster
	round   atomic.Pointer[simRound]
	stop    chan struct{}
	wg      sync.WaitGroup
	pulls   atomic.Int64
}

// simRound is one change being timed: its key and version, and when each
// node first held it.
type simRound struct {
	key     string
	version uint64
	start   time.Time
	arrived atomic.Int64
	at      []atomic.Int64 // ns after start, per node; 0: not yet
}

// simHandler is a node's gossip handler, timing the round's arrivals.
type simHandler struct {
	*gossip.Handler
	n *simNode
}

func (h simHandler) ApplyDelta(from, key string, version uint64, delta []byte) {
	h.Handler.ApplyDelta(from, key, version, delta)
	h.n.arrived(from, key)
}

func (h simHandler) MergeRemoteState(from string, data []byte) {
	h.Handler.MergeRemoteState(from, data)
	if r := h.n.sim.round.Load(); r != nil {
		h.n.arrived(from, r.key)
	}
}

// arrived records the round's arrival at n when its table holds it.
func (n *simNode) arrived(from, key string) {
	r := n.sim.round.Load()
	if r == nil || key != r.key || n.table.Version(from, key) < r.version {
		return
	}
	if r.at[n.i].CompareAndSwap(0, int64(time.Since(r.start))+1) { //clock:real the simulation times real delivery
		r.arrived.Add(1)
	}
}

// blob is n's full presence (its one session).
func (n *simNode) blob() gossip.Blob {
	n.mu.Lock()
	st := n.state
	hash := strconv.Itoa(n.gen)
	n.mu.Unlock()
	return n.pub.Blob(n.name, []gossip.Entry{gossip.EntryOf(&st, hash)})
}

// change changes n's session (a new activity) and gossips it; it returns
// the delta's version.
func (n *simNode) change() uint64 {
	n.mu.Lock()
	n.gen++
	acts := []presence.Activity{presence.ActivityWorking, presence.ActivityIdle, presence.ActivityNeedsInput}
	n.state.Activity = acts[n.gen%len(acts)]
	n.state.LastEvidenceAt = time.Now() //clock:real the simulation's events happen now
	st, hash := n.state, strconv.Itoa(n.gen)
	n.mu.Unlock()
	n.pub.Publish(&st, hash)
	v, _ := n.pub.SentVersion(st.SessionID)
	return v
}

func (n *simNode) digest() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return gossip.Digest([][2]string{{n.state.SessionID, strconv.Itoa(n.gen)}})
}

// pull is the digest repair, in process: a node that was gossiped a
// digest it does not hold merges the origin's full presence, as it would
// from the origin's cluster gRPC.
func (s *sim) pull(to *simNode, from string) {
	for _, o := range s.nodes {
		if o.name == from {
			if to.table.Digest(from) != o.digest() {
				b := o.blob()
				to.table.Merge(b)
				s.pulls.Add(1)
				to.arrived(from, o.state.SessionID)
			}
			return
		}
	}
}

// simConfig is a node's mesh configuration: harn's LAN timers.
func simConfig(tb testing.TB, name string, tr *mesh.MemTransport, h mesh.Handler) mesh.Config {
	c, err := mesh.ProfileConfig(mesh.ProfileLAN)
	if err != nil {
		tb.Fatal(err)
	}
	c.Name, c.Transport, c.Handler = name, tr, h
	c.BindAddr, c.BindPort = "127.0.0.1", 0
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	c.PeersFile = ""
	return c
}

// startSim starts n nodes, joined through node 0, with servers registry
// servers that the others follow, and waits until every node lists n
// alive members.
func startSim(tb testing.TB, n int) *sim {
	tb.Helper()
	s := &sim{tb: tb, net: &mesh.MemNetwork{}, stop: make(chan struct{})}
	tb.Cleanup(s.close)
	// The servers on LAN timers (1 s): a thousand nodes in one process
	// starve the fast test timers' elections.
	rc := raftstore.DefaultConfig()
	rc.InMemory = true
	s.servers = raftstore.MakeClusterConfig(tb, 3, 3, rc)
	var seed string
	for i := range n {
		nd := &simNode{i: i, name: fmt.Sprintf("sim%04d", i), tr: s.net.NewTransport(), table: gossip.NewTable(), sim: s}
		nd.state = presence.State{SessionID: nd.name + "-s", Node: nd.name, Agent: "claude-code",
			Activity: presence.ActivityIdle, TaskState: presence.TaskActive}
		h := simHandler{n: nd}
		h.Handler = &gossip.Handler{Self: nd.name, Table: nd.table, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Local: nd.blob, OnDigest: func(from string, digest []byte) {
				if nd.table.Digest(from) != string(digest) {
					s.pull(nd, from)
				}
			}}
		cfg := simConfig(tb, nd.name, nd.tr, h)
		if i > 0 {
			// A fleet's nodes join through whichever node they know: one
			// of those started before, at random (node 0 alone would carry
			// every join's push/pull).
			seed = s.nodes[rand.IntN(i)].tr.Addr()
			cfg.Join = []string{seed}
		}
		m, err := mesh.New(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		nd.m = m
		nd.pub = gossip.NewPublisher(clock.Real{}, slog.New(slog.NewTextHandler(io.Discard, nil)), m)
		if err := m.Start(); err != nil {
			tb.Fatal(err)
		}
		for try := 0; i > 0; try++ {
			_, err := m.Join([]string{seed})
			if err == nil {
				break
			}
			if try == 5 {
				tb.Fatalf("%s: join: %v", nd.name, err)
			}
			seed = s.nodes[rand.IntN(i)].tr.Addr()
		}
		nd.mirror = raftstore.NewMirror(raftstore.MirrorConfig{})
		srv := s.servers.Stores[i%3]
		ctx, cancel := context.WithCancel(context.Background())
		s.wg.Add(2)
		go func() {
			defer s.wg.Done()
			_ = raftstore.FollowInProcess(ctx, srv, nd.mirror, DefaultWatchProgress)
		}()
		go func() {
			defer s.wg.Done()
			<-s.stop
			cancel()
		}()
		s.nodes = append(s.nodes, nd)
		if (i+1)%100 == 0 {
			tb.Logf("%d of %d nodes started", i+1, n)
		}
	}
	s.waitAlive(tb, time.Duration(n)*300*time.Millisecond+60*time.Second)
	tb.Logf("%d nodes alive everywhere", n)
	for _, nd := range s.nodes {
		nd.change() // its session starts: a delta, as a node's first hook makes
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			nd.digestLoop(s.stop)
		}()
	}
	return s
}

// digestLoop is the node's digest cadence (presenceSync.digestLoop).
func (n *simNode) digestLoop(stop <-chan struct{}) {
	t := time.NewTicker(5 * time.Second) // harn's PresenceRefresh
	defer t.Stop()
	var cad digestCadence
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if d := n.digest(); cad.tick(d) {
			n.pub.BroadcastDigest(d)
		}
	}
}

func (s *sim) waitAlive(tb testing.TB, bound time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(bound)
	for i := 0; ; i++ {
		all := true
		for _, nd := range s.nodes {
			if nd.m.NumAlive() != len(s.nodes) {
				all = false
				break
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) || i > 100000 {
			tb.Fatalf("%d nodes not all alive everywhere within %v", len(s.nodes), bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *sim) close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	var wg sync.WaitGroup
	for _, nd := range s.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd.m.Shutdown()
		}()
	}
	wg.Wait()
	s.wg.Wait()
}

// sent is the bytes every node sent so far.
func (s *sim) sent() int64 {
	var t int64
	for _, nd := range s.nodes {
		t += nd.tr.SentBytes()
	}
	return t
}

// simResult is what one run of the simulation measured.
type simResult struct {
	nodes                          int
	propP50, propP99, propAll      time.Duration // per-node arrival of a presence change; the last node's
	regP50, regP99                 time.Duration // per-node arrival of a registry write in the mirrors
	healConverge                   time.Duration // partition healed → every node holds every change
	idleBytes, busyBytes, perDelta float64       // bytes per node per second idle, busy; per node per change
	misses                         int           // rounds some node missed within the bound
	pulls                          int64
}

// propagate times rounds presence changes from random nodes, one at a
// time, until every other node holds each (bounded).
func (s *sim) propagate(rounds int, bound time.Duration) (p50, p99, all time.Duration, misses int) {
	var lat, alls []time.Duration
	for range rounds {
		o := s.nodes[rand.IntN(len(s.nodes))]
		r := &simRound{key: o.state.SessionID, start: time.Now(), at: make([]atomic.Int64, len(s.nodes))} //clock:real
		r.version = o.pub.NextVersion()                                                                   // the change's version is later
		s.round.Store(r)
		o.change()
		deadline := time.Now().Add(bound)
		for r.arrived.Load() < int64(len(s.nodes)-1) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		s.round.Store(nil)
		var last time.Duration
		for i := range r.at {
			if i == o.i {
				continue
			}
			d := time.Duration(r.at[i].Load())
			if d == 0 {
				d = bound
			}
			lat = append(lat, d)
			last = max(last, d)
		}
		if r.arrived.Load() < int64(len(s.nodes)-1) {
			misses++
		}
		alls = append(alls, last)
		time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
	}
	slices.Sort(lat)
	slices.Sort(alls)
	return pct(lat, 50), pct(lat, 99), pct(alls, 50), misses
}

// registry times writes through the leader until every mirror holds them.
func (s *sim) registry(rounds int) (p50, p99 time.Duration) {
	var lat []time.Duration
	for i := range rounds {
		start := time.Now() //clock:real
		idx := s.servers.Apply(raftstore.UpsertCommand(raftstore.Upsert{SessionID: fmt.Sprintf("reg-%d", i), TS: start,
			Identity: &raftstore.IdentityPatch{Node: s.nodes[i%len(s.nodes)].name}}))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, nd := range s.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if nd.mirror.WaitForApplied(ctx, idx) == nil {
					d := time.Since(start) //clock:real
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	slices.Sort(lat)
	return pct(lat, 50), pct(lat, 99)
}

// heal partitions the mesh in two for hold, changes k nodes' presence on
// each side meanwhile, heals it, and times until every node holds every
// change (bounded).
func (s *sim) heal(k int, hold, bound time.Duration) time.Duration {
	half := len(s.nodes) / 2
	var a, b []string
	for i, nd := range s.nodes {
		if i < half {
			a = append(a, nd.tr.Addr())
		} else {
			b = append(b, nd.tr.Addr())
		}
	}
	s.net.Partition(a, b)
	type change struct {
		node *simNode
		v    uint64
	}
	var changes []change
	for range k {
		for _, nd := range []*simNode{s.nodes[rand.IntN(half)], s.nodes[half+rand.IntN(len(s.nodes)-half)]} {
			changes = append(changes, change{nd, nd.change()})
		}
	}
	time.Sleep(hold)
	start := time.Now() //clock:real
	s.net.Heal()
	deadline := start.Add(bound)
	for {
		done := true
		for _, c := range changes {
			for _, nd := range s.nodes {
				if nd != c.node && nd.table.Version(c.node.name, c.node.state.SessionID) < c.v {
					done = false
					break
				}
			}
			if !done {
				break
			}
		}
		if done {
			return time.Since(start) //clock:real
		}
		if time.Now().After(deadline) {
			return bound
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bytesPerNode is the bytes each node sent per second over d, while load
// runs (nil: idle).
func (s *sim) bytesPerNode(d time.Duration, load func(stop <-chan struct{})) float64 {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if load != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			load(stop)
		}()
	}
	b0, t0 := s.sent(), time.Now()
	time.Sleep(d)
	b1, t1 := s.sent(), time.Now()
	close(stop)
	wg.Wait()
	return float64(b1-b0) / t1.Sub(t0).Seconds() / float64(len(s.nodes))
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// runSim runs the whole simulation at n nodes; quick shortens its waits
// and windows (make test's small run).
func runSim(tb testing.TB, n, rounds int, quick bool) simResult {
	s := startSim(tb, n)
	r := simResult{nodes: n}
	// Let the joins' gossip and the first digests settle (3 digests 5 s
	// apart after each node's first change).
	settle, window, hold := 20*time.Second, 10*time.Second, 5*time.Second
	if quick {
		settle, window, hold = time.Second, time.Second, time.Second
	}
	time.Sleep(settle)
	r.idleBytes = s.bytesPerNode(window, nil)
	r.propP50, r.propP99, r.propAll, r.misses = s.propagate(rounds, 10*time.Second)
	r.regP50, r.regP99 = s.registry(10)
	// Busy: one change a second somewhere in the mesh.
	const rate = 1.0
	r.busyBytes = s.bytesPerNode(window, func(stop <-chan struct{}) {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.nodes[rand.IntN(n)].change()
			}
		}
	})
	r.perDelta = (r.busyBytes - r.idleBytes) / rate
	r.healConverge = s.heal(3, hold, 60*time.Second)
	r.pulls = s.pulls.Load()
	s.close()
	return r
}

func (r simResult) String() string {
	return fmt.Sprintf("%5d nodes: presence p50 %v p99 %v (all %v, %d misses); registry p50 %v p99 %v; heal %v; bytes/node/s idle %.0f busy %.0f (+%.0f per change/s); pulls %d",
		r.nodes, r.propP50.Round(time.Millisecond), r.propP99.Round(time.Millisecond), r.propAll.Round(time.Millisecond), r.misses,
		r.regP50.Round(time.Millisecond), r.regP99.Round(time.Millisecond), r.healConverge.Round(time.Millisecond),
		r.idleBytes, r.busyBytes, r.perDelta, r.pulls)
}

// TestMeshSimulation runs the simulation at 10 nodes (HARN_SIM_NODES sets
// another size, e.g. 1000: a few minutes of both cores): every change
// reaches every node, every registry write every mirror, and a healed
// partition converges.
func TestMeshSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("the simulation takes about a minute")
	}
	n := 10
	if v, err := strconv.Atoi(os.Getenv("HARN_SIM_NODES")); err == nil && v > 1 {
		n = v
	}
	r := runSim(t, n, 10, n <= 20)
	t.Log(r)
	if r.misses > 0 || r.healConverge >= 60*time.Second || r.regP99 == 0 {
		t.Fatalf("the simulation did not converge: %v", r)
	}
}

// BenchmarkMeshSimulation runs the simulation at 10, 100 and 1,000 nodes
// and reports its figures (make bench; about ten minutes).
func BenchmarkMeshSimulation(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			r := runSim(b, n, 20, false)
			b.ReportMetric(float64(r.propP50.Microseconds())/1000, "prop_p50_ms")
			b.ReportMetric(float64(r.propP99.Microseconds())/1000, "prop_p99_ms")
			b.ReportMetric(float64(r.regP50.Microseconds())/1000, "reg_p50_ms")
			b.ReportMetric(float64(r.regP99.Microseconds())/1000, "reg_p99_ms")
			b.ReportMetric(r.healConverge.Seconds(), "heal_s")
			b.ReportMetric(r.idleBytes, "idle_B/node/s")
			b.ReportMetric(r.busyBytes, "busy_B/node/s")
			b.ReportMetric(float64(r.misses), "misses")
			b.Log(r)
		})
	}
}
