package node

// Cluster benchmarks: in-process harn nodes on real loopback UDP/TCP with
// LAN timers, each measured beside the bare library (memberlist, raft,
// gRPC) in the same run, reported as ratios (docs/perf-mesh.md):
//
//	go test -run '^$' -bench 'Propagation|LifecycleCommit|Convergence' ./node/
//
// Each runs a fixed number of rounds (b.N is not used; one call takes
// longer than -benchtime, so the benchmark runs once), skips under -short,
// and closes every node it started. Benchmarks report; they never fail on
// speed.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

// cbCluster is n in-process nodes: the first `servers` of them Raft voters
// (bootstrap-expect servers), the rest non-voters, all joining node 0.
type cbCluster struct {
	tb     testing.TB
	nodes  []*Node
	closed []bool
	socks  []string
}

func cbName(i int) string { return fmt.Sprintf("hb%02d", i) }

// cbConfig is node i's config: LAN mesh and Raft profiles on 127.0.0.1,
// ports picked by the kernel, a short socket path.
func cbConfig(tb testing.TB, base string, i, servers int, join string) (Config, string) {
	tb.Helper()
	sockDir, err := os.MkdirTemp("", "hb")
	if err != nil {
		tb.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.DataDir = filepath.Join(base, cbName(i))
	cfg.Socket = filepath.Join(sockDir, "s.sock")
	cfg.Name = cbName(i)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cc := &cfg.Cluster
	cc.Enabled = true
	cc.Bind = "127.0.0.1"
	cc.GossipPort, cc.RaftPort, cc.RPCPort, cc.HTTPPort = 0, 0, 0, 0
	cc.MeshProfile, cc.RaftProfile = "lan", "lan"
	cc.InsecureMesh = true // a plaintext mesh (the TLS one is startTrustMesh)
	if i < servers {
		cc.Server, cc.BootstrapExpect = true, servers
	}
	if join != "" {
		cc.Join = []string{join}
	}
	return cfg, sockDir
}

// startCBCluster opens node 0, then the others concurrently. It returns
// when every Open has returned; the caller waits for convergence.
func startCBCluster(tb testing.TB, n, servers int) *cbCluster {
	tb.Helper()
	base := tb.TempDir()
	c := &cbCluster{tb: tb, nodes: make([]*Node, n), closed: make([]bool, n), socks: make([]string, n)}
	open := func(i int, join string) error {
		cfg, sock := cbConfig(tb, base, i, servers, join)
		c.socks[i] = sock
		nd, err := New(cfg)
		if err != nil {
			return err
		}
		if err := nd.Open(); err != nil {
			return fmt.Errorf("%s: %w", cfg.Name, err)
		}
		c.nodes[i] = nd
		return nil
	}
	if err := open(0, ""); err != nil {
		c.Close()
		tb.Fatal(err)
	}
	seed := c.nodes[0].MeshAddr()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = open(i, seed)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			c.Close()
			tb.Fatal(err)
		}
	}
	return c
}

// Close closes every node still open, concurrently, and removes the
// socket dirs. It is safe to call twice.
func (c *cbCluster) Close() {
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		if nd == nil || c.closed[i] {
			continue
		}
		c.closed[i] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd.Close()
		}()
	}
	wg.Wait()
	for _, s := range c.socks {
		if s != "" {
			os.RemoveAll(s)
		}
	}
}

// kill closes node i abruptly: Node.Close shuts its mesh down without a
// graceful leave, so the others must detect the failure.
func (c *cbCluster) kill(i int) {
	c.closed[i] = true
	c.nodes[i].Close()
}

// aliveCount is how many members node i lists alive (itself included).
func (c *cbCluster) aliveCount(i int) int {
	k := 0
	for _, m := range c.nodes[i].cl.Parts().Mesh.Members() {
		if m.Status == mesh.StatusAlive {
			k++
		}
	}
	return k
}

// membersConverged reports whether every open node lists want alive
// members.
func (c *cbCluster) membersConverged(want int) bool {
	for i, nd := range c.nodes {
		if nd == nil || c.closed[i] {
			continue
		}
		if c.aliveCount(i) != want {
			return false
		}
	}
	return true
}

// leader returns the index of the node whose registry leads, or -1.
func (c *cbCluster) leader() int {
	for i, nd := range c.nodes {
		if nd != nil && !c.closed[i] && nd.cl.Registry().IsLeader() {
			return i
		}
	}
	return -1
}

// raftServers is the size of the leader's Raft configuration (0 without
// a leader).
func (c *cbCluster) raftServers() int {
	l := c.leader()
	if l < 0 {
		return 0
	}
	s, err := c.nodes[l].cl.Parts().Store.Servers()
	if err != nil {
		return 0
	}
	return len(s)
}

// raftMembers is how many nodes hold the raft log (servers and
// replicas): the configuration the leader converges to.
func (c *cbCluster) raftMembers() int {
	k := 0
	for i, nd := range c.nodes {
		if nd != nil && !c.closed[i] && nd.cl.Parts().Store != nil {
			k++
		}
	}
	return k
}

// waitConverged waits until every node lists n alive members and the
// leader's configuration holds every server.
func (c *cbCluster) waitConverged(timeout time.Duration) {
	c.tb.Helper()
	n := len(c.nodes)
	mesh.WaitFor(c.tb, timeout, fmt.Sprintf("%d nodes converged (members and registry)", n), func() bool {
		return c.membersConverged(n) && c.raftServers() == c.raftMembers()
	})
}

func cbIngest(tb testing.TB, nd *Node, session, typ string, attrs map[string]any) {
	tb.Helper()
	ev := presence.Event{SessionID: session, Type: typ, TS: time.Now(), Agent: "claude-code", Attrs: attrs}
	if _, err := nd.Ingest([]presence.Event{ev}); err != nil {
		tb.Fatal(err)
	}
}

// sentVersion is the gossip version node nd last broadcast for session.
func sentVersion(nd *Node, session string) uint64 {
	v, _ := nd.cl.Parts().Pub.SentVersion(session)
	return v
}

// remoteVersion is the version of origin's session that nd holds from
// gossip (deltas or push/pull), 0 if none: the data its roster shows.
func remoteVersion(nd *Node, origin, session string) uint64 {
	return nd.remote.Version(origin, session)
}

func cbPercentiles(s []time.Duration) (p50, p99, mx time.Duration) {
	if len(s) == 0 {
		return 0, 0, 0
	}
	s = slices.Clone(s)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), s[len(s)-1]
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratioOf(a, b time.Duration) float64 { return float64(a) / float64(max(b, time.Microsecond)) }

// BenchmarkPresencePropagation: the time from node.Ingest of an activity
// change (interaction.input_requested, then input_resolved, alternately) on
// one node until every other node holds that session's new version from
// gossip (polled every 1 ms; after each round every other node's Roster is
// checked to show the new activity, sourced from gossip). Beside it, in
// the same run and interleaved round by round, a bare memberlist mesh of
// the same size and LAN config broadcasts a blob of the same size as
// harn's delta frame (mesh.StartBareMesh). Nodes: 3 servers, the rest
// non-voters. Reports p50/p99/max, the rounds over 2 s, and harn/bare.
func BenchmarkPresencePropagation(b *testing.B) {
	if testing.Short() {
		b.Skip("starts real-network clusters; skipped under -short")
	}
	for _, sz := range []struct{ nodes, rounds int }{{5, 40}, {20, 30}} {
		b.Run(fmt.Sprintf("nodes=%d", sz.nodes), func(b *testing.B) {
			benchPresencePropagation(b, sz.nodes, sz.rounds)
		})
	}
}

const (
	harnPropCap = 5 * time.Second // a harn round waits this long at most
	barePropCap = 3 * time.Second // as mesh.BenchmarkPropagation
	propTarget  = 2 * time.Second // a round over it counts
)

func benchPresencePropagation(b *testing.B, n, rounds int) {
	t0 := time.Now()
	c := startCBCluster(b, n, 3)
	defer c.Close()
	c.waitConverged(60 * time.Second)
	setup := time.Since(t0)

	// One session per node, seen everywhere before the rounds start.
	sid := func(i int) string { return "pp-" + cbName(i) }
	for i, nd := range c.nodes {
		cbIngest(b, nd, sid(i), presence.TypeSessionStart, nil)
	}
	mesh.WaitFor(b, 30*time.Second, "every session gossiped everywhere", func() bool {
		for i := range c.nodes {
			for j, nd := range c.nodes {
				if i != j && remoteVersion(nd, cbName(i), sid(i)) == 0 {
					return false
				}
			}
		}
		return true
	})

	// The bare side's blob is as long as harn's delta frame for the same
	// session state (the JSON entry plus mesh's frame header).
	st, err := c.nodes[0].Resolve(sid(0))
	if err != nil {
		b.Fatal(err)
	}
	st.Activity, st.ActivitySource = presence.ActivityNeedsInput, "hook"
	delta, err := gossip.EncodeDelta(gossip.EntryOf(&st, "0123456789abcdef0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	frame := len(delta) + len(cbName(0)) + len(sid(0)) + 12
	bt := &mesh.PropTracker{}
	bare := mesh.StartBareMesh(b, n, bt.Mark)
	defer bare.Close()

	var harnS, bareS []time.Duration
	harnOver, bareOver, harnMiss, bareMiss, mismatch := 0, 0, 0, 0, 0
	needsInput := make([]bool, n) // the next event for node i's session
	for i := range needsInput {
		needsInput[i] = true
	}
	pause := func() { time.Sleep(50*time.Millisecond + rand.N(200*time.Millisecond)) }
	ctx := context.Background()

	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		origin := r % n
		on, s := c.nodes[origin], sid(origin)

		// harn: Ingest on origin, until every other node has the version.
		typ, want := presence.TypeInputResolved, presence.ActivityWorking
		if needsInput[origin] {
			typ, want = presence.TypeInputRequested, presence.ActivityNeedsInput
		}
		needsInput[origin] = !needsInput[origin]
		prev := sentVersion(on, s)
		sent := time.Now()
		cbIngest(b, on, s, typ, nil)
		v := sentVersion(on, s)
		if v <= prev {
			b.Fatalf("round %d: %s's change of %s was not broadcast (version %d, before %d)", r, on.Name(), s, v, prev)
		}
		seen := make([]bool, n)
		seen[origin] = true
		left := n - 1
		var last time.Time
		for left > 0 {
			now := time.Now()
			if now.Sub(sent) > harnPropCap {
				break
			}
			for j, nd := range c.nodes {
				if !seen[j] && remoteVersion(nd, on.Name(), s) >= v {
					seen[j], last = true, now
					left--
				}
			}
			if left > 0 {
				time.Sleep(time.Millisecond)
			}
		}
		if left > 0 {
			harnMiss++
			harnS = append(harnS, harnPropCap)
		} else {
			harnS = append(harnS, last.Sub(sent))
		}
		if harnS[len(harnS)-1] > propTarget {
			harnOver++
		}
		// The roster of every other node shows it, from gossip.
		for j, nd := range c.nodes {
			if j == origin || !seen[j] {
				continue
			}
			entries, _, err := nd.roster.List(ctx, false, false, true)
			ok := false
			for _, e := range entries {
				if err == nil && e.State().SessionID == s && e.Source == "gossip" && e.State().Activity == want {
					ok = true
				}
			}
			if !ok {
				mismatch++
			}
		}
		pause()

		// bare: the same size of blob from the same origin index.
		id := fmt.Sprintf("bare-%d", r)
		done := bt.Start(id, origin, n-1)
		sent = time.Now()
		bare.Broadcast(origin, id, frame)
		timer := time.NewTimer(barePropCap)
		select {
		case at := <-done:
			bareS = append(bareS, at.Sub(sent))
		case <-timer.C:
			bareMiss++
			bareS = append(bareS, barePropCap)
		}
		timer.Stop()
		if bareS[len(bareS)-1] > propTarget {
			bareOver++
		}
		pause()
	}
	b.StopTimer()

	hp50, hp99, hmax := cbPercentiles(harnS)
	bp50, bp99, bmax := cbPercentiles(bareS)
	b.ReportMetric(msOf(hp50), "harn_p50_ms")
	b.ReportMetric(msOf(hp99), "harn_p99_ms")
	b.ReportMetric(msOf(hmax), "harn_max_ms")
	b.ReportMetric(float64(harnOver), "harn_over2s")
	b.ReportMetric(float64(harnMiss), "harn_misses")
	b.ReportMetric(msOf(bp50), "bare_p50_ms")
	b.ReportMetric(msOf(bp99), "bare_p99_ms")
	b.ReportMetric(msOf(bmax), "bare_max_ms")
	b.ReportMetric(float64(bareOver), "bare_over2s")
	b.ReportMetric(float64(bareMiss), "bare_misses")
	b.ReportMetric(ratioOf(hp50, bp50), "harn/bare_p50")
	b.ReportMetric(ratioOf(hmax, bmax), "harn/bare_max")
	b.ReportMetric(float64(mismatch), "roster_mismatch")
	b.ReportMetric(float64(len(harnS)), "rounds")
	b.ReportMetric(float64(frame), "blob_bytes")
	b.ReportMetric(setup.Seconds(), "setup_s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkLifecycleCommit: 3 server nodes; on a node that does not lead,
// node.Lifecycle(blocked) with alternating reasons, which returns once the
// registry committed the change (ledger write, forward to the leader over
// the cluster gRPC, raft commit). Beside it, interleaved op by op in the
// same run: a bare raft Apply of the same command on 3 plain raft servers
// (raftstore.StartBareRaft, same LAN timers, bolt, TCP), one loopback gRPC
// unary round trip (the standard health check over TCP 127.0.0.1), and,
// to break the harn figure down, node.Ingest of an event that changes no
// presence (the ledger's synced write alone), the same registry command
// forwarded from that node (fwd) and applied on the leader (store), each
// on a session of its own. Reports p50/p99 of each, harn p99 / (bare p99 +
// rtt p50), and the raft entries each Lifecycle adds (1 is ideal).
func BenchmarkLifecycleCommit(b *testing.B) {
	if testing.Short() {
		b.Skip("starts two 3-server clusters over TCP; skipped under -short")
	}
	const warm, ops = 20, 300
	c := startCBCluster(b, 3, 3)
	defer c.Close()
	c.waitConverged(60 * time.Second)
	l := c.leader()
	f := (l + 1) % 3
	fn, ln := c.nodes[f], c.nodes[l]

	rafts := raftstore.StartBareRaft(b, 3, raftstore.DefaultConfig())
	bare := raftstore.BareLeader(b, rafts)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)

	const session, quiet = "lc-1", "lc-quiet"
	cbIngest(b, fn, session, presence.TypeSessionStart, nil)
	cbIngest(b, fn, quiet, presence.TypeSessionStart, nil)
	mesh.WaitFor(b, 30*time.Second, "sessions in the registry", func() bool {
		_, ok1 := ln.cl.Registry().Get(session)
		_, ok2 := ln.cl.Registry().Get(quiet)
		return ok1 && ok2
	})

	ctx := context.Background()
	reasons := []string{"waiting on review of the schema change", "waiting on CI for the release branch"}
	// The command the registry writer sends for a lifecycle change.
	regCmd := func(session, reason string) raftstore.Command {
		return raftstore.BatchCommand(raftstore.Upsert{SessionID: session, TS: time.Now(),
			Lifecycle: &raftstore.LifecyclePatch{TaskState: "blocked", Reason: reason}})
	}
	const fwdSession, storeSession = "lc-fwd", "lc-store"
	var harnL, bareL, rttL, ingL, fwdL, storeL []time.Duration
	notes := 0
	op := func(i int, record bool) {
		reason := reasons[i%2]
		steps := []func(){
			func() { // harn
				t := time.Now()
				res, err := fn.decl.Lifecycle(ctx, session, presence.TaskBlocked, reason)
				d := time.Since(t)
				if err != nil {
					b.Fatal(err)
				}
				if !res.Recorded {
					b.Fatalf("op %d: lifecycle not recorded", i)
				}
				if res.Note != "" {
					notes++
				}
				if record {
					harnL = append(harnL, d)
				}
			},
			func() { // bare raft: the command the registry writer sends
				cmd, err := raftstore.EncodeCommand(regCmd(session, reason))
				if err != nil {
					b.Fatal(err)
				}
				t := time.Now()
				if err := bare.Apply(cmd, 10*time.Second).Error(); err != nil {
					b.Fatal(err)
				}
				if record {
					bareL = append(bareL, time.Since(t))
				}
			},
			func() { // one loopback gRPC round trip
				t := time.Now()
				if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
					b.Fatal(err)
				}
				if record {
					rttL = append(rttL, time.Since(t))
				}
			},
			func() { // the ledger's synced write alone
				t := time.Now()
				cbIngest(b, fn, quiet, presence.TypeNarration, nil)
				if record {
					ingL = append(ingL, time.Since(t))
				}
			},
			func() { // the registry write alone, forwarded from fn to the leader
				t := time.Now()
				if _, err := fn.cl.Apply(ctx, regCmd(fwdSession, reason)); err != nil {
					b.Fatal(err)
				}
				if record {
					fwdL = append(fwdL, time.Since(t))
				}
			},
			func() { // the registry write alone, on the leader
				t := time.Now()
				if _, err := ln.cl.Parts().Store.Apply(ctx, regCmd(storeSession, reason)); err != nil {
					b.Fatal(err)
				}
				if record {
					storeL = append(storeL, time.Since(t))
				}
			},
		}
		for k := range steps { // rotate the order so no side always goes first
			steps[(i+k)%len(steps)]()
		}
	}
	for i := range warm {
		op(i, false)
	}
	applied0 := ln.cl.Parts().Store.Stats().AppliedIndex
	b.ResetTimer()
	for i := range ops {
		op(i, true)
	}
	b.StopTimer()
	time.Sleep(100 * time.Millisecond) // let a trailing background write land
	// Entries per op beyond the two direct registry writes of each op.
	entries := float64(ln.cl.Parts().Store.Stats().AppliedIndex-applied0)/ops - 2
	if c.leader() != l {
		b.Logf("leadership moved during the run (from %s)", ln.Name())
	}

	hp50, hp99, _ := cbPercentiles(harnL)
	bp50, bp99, _ := cbPercentiles(bareL)
	rp50, rp99, _ := cbPercentiles(rttL)
	ip50, ip99, _ := cbPercentiles(ingL)
	b.ReportMetric(msOf(hp50), "harn_p50_ms")
	b.ReportMetric(msOf(hp99), "harn_p99_ms")
	b.ReportMetric(msOf(bp50), "bare_p50_ms")
	b.ReportMetric(msOf(bp99), "bare_p99_ms")
	b.ReportMetric(msOf(rp50), "rtt_p50_ms")
	b.ReportMetric(msOf(rp99), "rtt_p99_ms")
	b.ReportMetric(msOf(ip50), "ingest_p50_ms")
	b.ReportMetric(msOf(ip99), "ingest_p99_ms")
	fp50, fp99, _ := cbPercentiles(fwdL)
	sp50, sp99, _ := cbPercentiles(storeL)
	b.ReportMetric(msOf(fp50), "fwd_p50_ms")
	b.ReportMetric(msOf(fp99), "fwd_p99_ms")
	b.ReportMetric(msOf(sp50), "store_p50_ms")
	b.ReportMetric(msOf(sp99), "store_p99_ms")
	b.ReportMetric(ratioOf(hp99, bp99+rp50), "harn_p99/(bare_p99+rtt)")
	b.ReportMetric(ratioOf(hp50, bp50+rp50), "harn_p50/(bare_p50+rtt)")
	b.ReportMetric(entries, "raft_entries/op")
	b.ReportMetric(float64(notes), "pending_notes")
	b.ReportMetric(float64(len(harnL)), "ops")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkConvergence20: a cold start of 20 nodes (3 servers and 17
// nodes that follow the registry's watch, all joining node 0, node 0
// first and the rest concurrently) until every node lists 20 alive
// members and the registry's leader has its 3 servers in its
// configuration; then one node that is not a server is killed (Node.Close:
// its mesh shuts down without a graceful leave) and the time until every
// other node lists it dead. Beside it, in the same run: a bare memberlist
// mesh of 20 (mesh.StartBareMesh: its start until all see 20, and one node
// killed at the same moment as harn's, until all others drop it). Polled
// every 10 ms.
func BenchmarkConvergence20(b *testing.B) {
	if testing.Short() {
		b.Skip("starts 20 real-network nodes; skipped under -short")
	}
	const n, poll = 20, 10 * time.Millisecond
	t0 := time.Now()
	c := startCBCluster(b, n, 3)
	defer c.Close()
	opened := time.Since(t0)
	var members, leader, raftFull time.Duration
	deadline := t0.Add(90 * time.Second)
	for members == 0 || raftFull == 0 {
		if time.Now().After(deadline) {
			b.Fatalf("not converged after 90 s: members %v, leader %v, raft %d servers", members, leader, c.raftServers())
		}
		el := time.Since(t0)
		if members == 0 && c.membersConverged(n) {
			members = el
		}
		if leader == 0 && c.leader() >= 0 {
			leader = el
		}
		if raftFull == 0 && c.raftServers() == c.raftMembers() {
			raftFull = el
		}
		time.Sleep(poll)
	}
	converged := max(members, raftFull)

	t1 := time.Now()
	bare := mesh.StartBareMesh(b, n, func(int, string) {})
	defer bare.Close()
	bareStart := time.Since(t1)

	victim := n - 1 // a non-voter
	name := cbName(victim)
	dead := func(i int) bool {
		for _, m := range c.nodes[i].cl.Parts().Mesh.Members() {
			if m.Name == name {
				return m.Status == mesh.StatusDead
			}
		}
		return false
	}
	k0 := time.Now()
	bare.Kill(victim)
	c.kill(victim)
	closed := time.Since(k0)
	var deadFirst, deadAll, bareFirst, bareAll time.Duration
	deadline = k0.Add(60 * time.Second)
	for deadAll == 0 || bareAll == 0 {
		if time.Now().After(deadline) {
			b.Fatalf("%s not declared dead everywhere after 60 s (harn %v, bare %v)", name, deadAll, bareAll)
		}
		el := time.Since(k0)
		nDead, nBare := 0, 0
		for i := range c.nodes {
			if i == victim {
				continue
			}
			if dead(i) {
				nDead++
			}
			if bare.NumMembers(i) == n-1 {
				nBare++
			}
		}
		if nDead > 0 && deadFirst == 0 {
			deadFirst = el
		}
		if nDead == n-1 && deadAll == 0 {
			deadAll = el
		}
		if nBare > 0 && bareFirst == 0 {
			bareFirst = el
		}
		if nBare == n-1 && bareAll == 0 {
			bareAll = el
		}
		time.Sleep(poll)
	}

	b.ReportMetric(opened.Seconds(), "opened_s")
	b.ReportMetric(leader.Seconds(), "leader_s")
	b.ReportMetric(members.Seconds(), "members20_s")
	b.ReportMetric(raftFull.Seconds(), "raft20_s")
	b.ReportMetric(converged.Seconds(), "converged_s")
	b.ReportMetric(bareStart.Seconds(), "bare_members20_s")
	b.ReportMetric(closed.Seconds(), "kill_s")
	b.ReportMetric(deadFirst.Seconds(), "dead_first_s")
	b.ReportMetric(deadAll.Seconds(), "dead_all_s")
	b.ReportMetric(bareFirst.Seconds(), "bare_dead_first_s")
	b.ReportMetric(bareAll.Seconds(), "bare_dead_all_s")
	b.ReportMetric(0, "ns/op")
}
