package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
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
	tb       testing.TB
	net      *mesh.MemNetwork
	nodes    []*simNode
	servers  *raftstore.Cluster
	progress []*simProgress // per server, shared by the watches it serves
	deadline time.Time      // the run's wall-clock budget ends
	round    atomic.Pointer[simRound]
	ctx      context.Context // ends at close: the watches
	cancel   context.CancelFunc
	stop     chan struct{}
	wg       sync.WaitGroup
	pulls    atomic.Int64
}

// logf reports the run's progress: on stderr at once in a benchmark
// (whose log shows at its end, cut to ten lines), else in the test's log.
func (s *sim) logf(format string, args ...any) {
	s.tb.Helper()
	if _, ok := s.tb.(*testing.B); ok {
		fmt.Fprintf(os.Stderr, "sim: "+format+"\n", args...)
		return
	}
	s.tb.Logf(format, args...)
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

// simConfig is a node's mesh configuration: harn's LAN timers. In a
// mesh of more than DirectSendMax nodes no direct send is ever made, so
// the simulation gives those a pool of one worker and a short queue (the
// default's four workers and 1,024 jobs are idle memory a thousand times
// over); smaller meshes keep the default.
func simConfig(tb testing.TB, name string, n int, tr *mesh.MemTransport, h mesh.Handler) mesh.Config {
	c, err := mesh.ProfileConfig(mesh.ProfileLAN)
	if err != nil {
		tb.Fatal(err)
	}
	c.Name, c.Transport, c.Handler = name, tr, h
	c.BindAddr, c.BindPort = "127.0.0.1", 0
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	c.PeersFile = ""
	if n > c.DirectSendMax {
		c.DirectSendWorkers, c.DirectSendQueue = 1, 16
	}
	return c
}

// Joins: a fleet's nodes join in waves, each node through a random node
// of those joined before its wave (one seed would carry every join's
// push/pull), one push/pull at a time; before the next wave, a sample of
// nodes must list every node started so far alive, so that the gossip of
// one wave's alive messages (each node re-gossips every member it learns
// of) drains before the next adds to it.
const (
	simWaveMin   = 10               // nodes in the first waves
	simWaveShare = 4                // later waves: a quarter of the nodes already joined,
	simWaveMax   = 50               // and at most this many
	simWaveWait  = 60 * time.Second // bound on one wave's settling
	simSample    = 5                // nodes checked after each wave
	simCalm      = 10               // 50 ms sleeps on time in a row that end a wave
	simRepair    = 5 * time.Second  // between the push/pulls of the nodes behind
)

// startSim starts n nodes in waves, with three registry servers that the
// others follow, and waits until every node lists n alive members. It
// stops early when the deadline passes, and reports how far it got
// ("" when every node is alive everywhere).
func startSim(tb testing.TB, n int, deadline time.Time) (*sim, string) {
	tb.Helper()
	s := &sim{tb: tb, net: &mesh.MemNetwork{}, stop: make(chan struct{}), deadline: deadline}
	// The network counts each packet and stream at the size memberlist's
	// LZW gives it, and the nodes skip compressing: the same bytes, without
	// a fresh 64 KiB table per packet (see mesh.MemNetwork).
	s.net.EmulateCompression()
	s.net.Meter(false) // on only in the windows that count bytes
	s.ctx, s.cancel = context.WithCancel(context.Background())
	tb.Cleanup(s.close)
	// The servers on LAN timers (1 s): a thousand nodes in one process
	// starve the fast test timers' elections.
	rc := raftstore.DefaultConfig()
	rc.InMemory = true
	s.servers = raftstore.MakeClusterConfig(tb, 3, 3, rc)
	for range s.servers.Stores {
		s.progress = append(s.progress, &simProgress{})
	}
	begin, cpu0 := time.Now(), processCPU() //clock:real
	for joined := 0; joined < n; {
		wave := min(n-joined, simWaveMax, max(simWaveMin, joined/simWaveShare))
		for i := joined; i < joined+wave; i++ {
			if time.Now().After(deadline) { //clock:real the run's budget is wall time
				return s, fmt.Sprintf("joins (%d of %d nodes started)", i, n)
			}
			s.startNode(tb, i, n, joined)
		}
		joined += wave
		if joined%100 < wave || joined == n {
			s.logf("%d of %d nodes started (%v, CPU %v)", joined, n, time.Since(begin).Round(time.Second), (processCPU() - cpu0).Round(time.Second)) //clock:real
		}
		if !s.settled(joined-wave, joined, min(simWaveWait, time.Until(deadline))) { //clock:real
			if time.Now().After(deadline) { //clock:real
				return s, fmt.Sprintf("joins (%d of %d nodes started, not yet alive everywhere)", joined, n)
			}
			s.logf("wave up to %d nodes not settled within %v; going on", joined, simWaveWait)
		}
	}
	if left := s.waitAlive(min(time.Duration(n)*300*time.Millisecond+60*time.Second, time.Until(deadline))); left > 0 { //clock:real
		return s, fmt.Sprintf("alive (%d of %d nodes do not list all %d alive)", left, n, n)
	}
	s.logf("%d nodes alive everywhere (%v, CPU %v)", n, time.Since(begin).Round(time.Second), (processCPU() - cpu0).Round(time.Second)) //clock:real
	cads := s.seedPresence()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.digestLoop(cads)
	}()
	return s, ""
}

// startNode starts node i of n and joins it through one of the first
// joined nodes (none for node 0).
func (s *sim) startNode(tb testing.TB, i, n, joined int) {
	tb.Helper()
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
	m, err := mesh.New(simConfig(tb, nd.name, n, nd.tr, h))
	if err != nil {
		tb.Fatal(err)
	}
	nd.m = m
	nd.pub = gossip.NewPublisher(clock.Real{}, slog.New(slog.NewTextHandler(io.Discard, nil)), m)
	if err := m.Start(); err != nil {
		tb.Fatal(err)
	}
	pool := joined // the nodes of the waves before this one
	if pool == 0 {
		pool = i // the first wave: those started before it
	}
	for try := 0; i > 0 && try < 5; try++ {
		if _, err := m.Join([]string{s.nodes[rand.IntN(pool)].tr.Addr()}); err == nil {
			break
		} else if try == 4 {
			// Its join loop goes on trying the seeds it was given.
			s.logf("%s: join: %v", nd.name, err)
		}
	}
	nd.mirror = raftstore.NewMirror(raftstore.MirrorConfig{})
	srv := i % len(s.servers.Stores)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = simFollow(s.ctx, s.servers.Stores[srv], s.progress[srv], nd.mirror)
	}()
	s.nodes = append(s.nodes, nd)
}

// settled waits until a sample of the first k nodes (the first, the
// last, and random others) each list k alive members, and the process
// keeps time again (calm); false when bound passes first. A node of the
// wave (from lo) can miss a member of its own wave: that member's alive
// messages were gossiped while the others did not know the node yet. A
// calm mesh whose sample is still behind has each node that is behind
// push/pull once more with an older node, as a periodic push/pull would
// (every 2 to 3 minutes at these sizes), every simRepair.
func (s *sim) settled(lo, k int, bound time.Duration) bool {
	sample := []*simNode{s.nodes[0], s.nodes[k-1]}
	for range simSample - 2 {
		sample = append(sample, s.nodes[rand.IntN(k)])
	}
	deadline := time.Now().Add(bound) //clock:real
	var repaired time.Time
	for calm := 0; calm < 100000; {
		all := true
		for _, nd := range sample {
			if nd.m.NumAlive() < k {
				all = false
				break
			}
		}
		// A 50 ms sleep that overshoots by more than 50 ms: the process
		// is behind on its work (memberlist's probes time out at 500 ms,
		// and a join wave's gossip, every node re-gossiping every member
		// it learns of, can take both cores for a while).
		t0 := time.Now() //clock:real
		time.Sleep(50 * time.Millisecond)
		if time.Since(t0) < 100*time.Millisecond { //clock:real
			calm++
		} else {
			calm = 0
		}
		if all && calm >= simCalm {
			return true
		}
		if !all && calm >= simCalm && time.Since(repaired) > simRepair { //clock:real
			s.repair(append(sample, s.nodes[lo:k]...), k)
			repaired = time.Now() //clock:real
		}
		if time.Now().After(deadline) { //clock:real
			for _, nd := range sample {
				if nd.m.NumAlive() < k {
					s.logf("%s lists %d alive of %d: %s", nd.name, nd.m.NumAlive(), k, s.notAlive(nd, k))
				}
			}
			return false
		}
	}
	return false
}

// simProgress is a server's full progress report shared among the
// watches it serves, read again when older than half a WatchProgress or
// when the leader changed, as the server's progressCache does.
type simProgress struct {
	mu     sync.Mutex
	at     time.Time
	leader string
	p      *raftstore.Progress
}

func (sp *simProgress) get(srv *raftstore.Store) raftstore.Progress {
	leader, _ := srv.Leader()
	now := time.Now() //clock:real
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.p != nil && sp.leader == leader && now.Sub(sp.at) < DefaultWatchProgress/2 {
		return *sp.p
	}
	st := srv.Stats()
	sp.p = &raftstore.Progress{Server: srv.ID(), Leader: st.LeaderID, Term: st.Term, CommitIndex: st.CommitIndex,
		Applied: st.AppliedIndex, Stale: st.Read.Stale, LeaderContact: st.Read.LastContact, Servers: st.Servers}
	sp.at, sp.leader = now, leader
	return *sp.p
}

// simLightProgress is the report that goes with entries: no raft call.
func simLightProgress(srv *raftstore.Store) raftstore.Progress {
	r := srv.Staleness()
	return raftstore.Progress{Server: srv.ID(), Leader: r.LeaderID, Applied: r.AppliedIndex, Stale: r.Stale, LeaderContact: r.LastContact}
}

// simFollow makes a node's mirror follow srv the way the registry's watch
// does over the cluster gRPC (Watch and watcher.follow): a snapshot when
// the feed does not reach the mirror, then every entry (a private one
// without its command), the shared full report every WatchProgress and
// at a leader change, a light one with entries. It returns when ctx ends
// or srv closes.
func simFollow(ctx context.Context, srv *raftstore.Store, sp *simProgress, m *raftstore.Mirror) error {
	w := srv.Watch(m.Applied())
	t := time.NewTicker(DefaultWatchProgress)
	defer t.Stop()
	m.Report(sp.get(srv))
	for {
		if w.NeedSnapshot() {
			b, _, err := w.Snapshot(false)
			if err != nil {
				return err
			}
			if err := m.Restore(b); err != nil {
				return err
			}
			m.Report(simLightProgress(srv))
		}
		es, err := w.Next(ctx, watchBatch, t.C)
		if errors.Is(err, raftstore.ErrFeedGap) {
			continue
		}
		if err != nil {
			return err
		}
		if len(es) == 0 {
			m.Report(sp.get(srv))
			continue
		}
		m.Report(simLightProgress(srv))
		for _, e := range es {
			if e.Private {
				e.Data = nil
			}
			m.Apply(e)
		}
	}
}

// seedPresence starts the mesh at rest: every node's session, and every
// node holding every other's, as push/pulls leave a mesh that has run a
// while, and each node's digest cadence past the digests of that state.
// (A thousand sessions started at once would gossip a thousand deltas and
// three thousand digests, each re-gossiped by every node: a million times
// a node's work, in one process, before anything is measured.) It
// returns the cadences for digestLoop.
func (s *sim) seedPresence() []digestCadence {
	blobs := make([]gossip.Blob, len(s.nodes))
	cads := make([]digestCadence, len(s.nodes))
	for i, nd := range s.nodes {
		nd.mu.Lock()
		nd.gen++
		nd.state.LastEvidenceAt = time.Now() //clock:real the session starts now
		nd.mu.Unlock()
		blobs[i] = nd.blob()
		cads[i] = digestCadence{last: nd.digest(), seen: true}
	}
	for i, nd := range s.nodes {
		for j, b := range blobs {
			if j != i {
				nd.table.Merge(b)
			}
		}
	}
	return cads
}

// digestLoop is every node's digest cadence (presenceSync.digestLoop):
// each node looks every PresenceRefresh (5 s), at its own phase. One
// goroutine and one ticker serve them all, a slot of nodes per tick.
func (s *sim) digestLoop(cads []digestCadence) {
	const every, tick = 5 * time.Second, 100 * time.Millisecond
	slots := int(every / tick)
	t := time.NewTicker(tick)
	defer t.Stop()
	for k := 0; ; k++ {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		for i := k % slots; i < len(s.nodes); i += slots {
			if d := s.nodes[i].digest(); cads[i].tick(d) {
				s.nodes[i].pub.BroadcastDigest(d)
			}
		}
	}
}

// waitAlive waits until every node lists every node alive, and returns
// how many do not when bound passes first (0: all do), logging what the
// first few of those list otherwise. The nodes that are behind push/pull
// once more every simRepair (see settled).
func (s *sim) waitAlive(bound time.Duration) int {
	deadline := time.Now().Add(bound) //clock:real
	repaired := time.Now()            //clock:real
	for i := 0; ; i++ {
		var behind []*simNode
		for _, nd := range s.nodes {
			if nd.m.NumAlive() != len(s.nodes) {
				behind = append(behind, nd)
			}
		}
		if len(behind) == 0 {
			return 0
		}
		if time.Now().After(deadline) || i > 100000 { //clock:real
			for _, nd := range behind[:min(len(behind), 3)] {
				s.logf("%s lists %d alive of %d: %s", nd.name, nd.m.NumAlive(), len(s.nodes), s.notAlive(nd, len(s.nodes)))
			}
			return len(behind)
		}
		if time.Since(repaired) > simRepair { //clock:real
			s.repair(behind, len(s.nodes))
			repaired = time.Now() //clock:real
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// repair has each of nodes that lists fewer than k alive push/pull with
// a random other node of the first k.
func (s *sim) repair(nodes []*simNode, k int) {
	n := 0
	for _, nd := range nodes {
		if nd.m.NumAlive() >= k {
			continue
		}
		o := s.nodes[rand.IntN(k)]
		if o == nd {
			continue
		}
		if _, err := nd.m.Join([]string{o.tr.Addr()}); err == nil {
			n++
		}
	}
	if n > 0 {
		s.logf("%d nodes behind pushed and pulled again (%d nodes)", n, k)
	}
}

// notAlive names some of the first k nodes that nd does not list alive,
// and how it lists them.
func (s *sim) notAlive(nd *simNode, k int) string {
	status := make(map[string]mesh.Status)
	for _, mb := range nd.m.Members() {
		status[mb.Name] = mb.Status
	}
	var out []string
	for _, o := range s.nodes[:k] {
		if st := status[o.name]; st != mesh.StatusAlive && st != mesh.StatusSuspect {
			out = append(out, fmt.Sprintf("%s %q", o.name, st))
		}
		if len(out) == 5 {
			break
		}
	}
	if len(status) > k {
		out = append(out, fmt.Sprintf("and %d members more than nodes", len(status)-k))
	}
	return strings.Join(out, ", ")
}

func (s *sim) close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	s.cancel()
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
