package node

import (
	"context"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

// BenchmarkLifecycleCommitTLS measures, in one run and interleaved, a
// lifecycle commit (Node.Lifecycle on a follower: ledger, registry write
// forwarded to the leader, raft commit) on a plaintext 3-server mesh and on
// a 3-server mesh with mutual TLS on raft and the cluster gRPC (made with
// mesh init and join tokens), against a bare raft Apply of the same command
// (3 servers, LAN timers, TCP); and the presence propagation of a delta
// from a follower to another node on both meshes (gossip: plaintext
// against keyed). Reports p50/p99 and tls_p50/plain_p50.
func BenchmarkLifecycleCommitTLS(b *testing.B) {
	if testing.Short() {
		b.Skip("starts two 3-server meshes over TCP; skipped under -short")
	}
	const warm, ops = 20, 200
	plain := startCBCluster(b, 3, 3)
	defer plain.Close()
	plain.waitConverged(60 * time.Second)

	lan := func(cfg *Config) {
		d := DefaultClusterConfig()
		cc := &cfg.Cluster
		cc.MeshProfile, cc.RaftProfile = d.MeshProfile, d.RaftProfile
		cc.PresenceRefresh, cc.ActivityFlush, cc.TrustSync = d.PresenceRefresh, d.ActivityFlush, d.TrustSync
	}
	tm, _ := startTrustMeshWith(b, lan)
	tm.join("tw1", tm.token(true, 0, 0), true)
	tm.join("tw2", tm.token(true, 0, 0), true)
	mesh.WaitFor(b, 60*time.Second, "three voters on the TLS mesh", func() bool {
		ss, err := tm.nodes[0].cl.Parts().Store.Servers()
		n := 0
		for _, s := range ss {
			if s.Voter {
				n++
			}
		}
		return err == nil && n == 3
	})
	rafts := raftstore.StartBareRaft(b, 3, raftstore.DefaultConfig())
	bare := raftstore.BareLeader(b, rafts)

	// A follower of each mesh, and another node that watches its gossip.
	pick := func(nodes []*Node) (f, other *Node) {
		for _, n := range nodes {
			if !n.cl.Registry().IsLeader() && f == nil {
				f = n
			} else if other == nil {
				other = n
			}
		}
		return f, other
	}
	pf, po := pick(plain.nodes)
	tf, to := pick(tm.nodes)
	const session = "lct-1"
	for _, n := range []*Node{pf, tf} {
		cbIngest(b, n, session, presence.TypeSessionStart, nil)
	}
	mesh.WaitFor(b, 30*time.Second, "the session in both registries", func() bool {
		_, ok1 := pf.cl.Registry().Get(session)
		_, ok2 := tf.cl.Registry().Get(session)
		return ok1 && ok2
	})
	ctx := context.Background()
	reasons := []string{"waiting on review of the schema change", "waiting on CI for the release branch"}
	var plainL, tlsL, bareL, plainP, tlsP []time.Duration
	commit := func(n *Node, i int, out *[]time.Duration, record bool) {
		t := time.Now()
		if _, err := n.decl.Lifecycle(ctx, session, presence.TaskBlocked, reasons[i%2]); err != nil {
			b.Fatal(err)
		}
		if record {
			*out = append(*out, time.Since(t))
		}
	}
	propagate := func(from, to *Node, i int, out *[]time.Duration, record bool) {
		typ := presence.TypeInputRequested
		if i%2 == 1 {
			typ = presence.TypeInputResolved
		}
		t := time.Now()
		cbIngest(b, from, session, typ, nil)
		want := sentVersion(from, session)
		mesh.WaitFor(b, 10*time.Second, "propagation", func() bool { return remoteVersion(to, from.Name(), session) >= want })
		if record {
			*out = append(*out, time.Since(t))
		}
	}
	op := func(i int, record bool) {
		steps := []func(){
			func() { commit(pf, i, &plainL, record) },
			func() { commit(tf, i, &tlsL, record) },
			func() {
				cmd, err := raftstore.EncodeCommand(raftstore.BatchCommand(raftstore.Upsert{SessionID: session, TS: time.Now(),
					Lifecycle: &raftstore.LifecyclePatch{TaskState: "blocked", Reason: reasons[i%2]}}))
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
			func() { propagate(pf, po, i, &plainP, record) },
			func() { propagate(tf, to, i, &tlsP, record) },
		}
		for k := range steps {
			steps[(i+k)%len(steps)]()
		}
	}
	for i := range warm {
		op(i, false)
	}
	b.ResetTimer()
	for i := range ops {
		op(i, true)
	}
	b.StopTimer()
	pp50, pp99, _ := cbPercentiles(plainL)
	tp50, tp99, _ := cbPercentiles(tlsL)
	bp50, bp99, _ := cbPercentiles(bareL)
	gp50, gp99, _ := cbPercentiles(plainP)
	kp50, kp99, _ := cbPercentiles(tlsP)
	b.ReportMetric(msOf(pp50), "plain_p50_ms")
	b.ReportMetric(msOf(pp99), "plain_p99_ms")
	b.ReportMetric(msOf(tp50), "tls_p50_ms")
	b.ReportMetric(msOf(tp99), "tls_p99_ms")
	b.ReportMetric(msOf(bp50), "bare_p50_ms")
	b.ReportMetric(msOf(bp99), "bare_p99_ms")
	b.ReportMetric(ratioOf(tp50, pp50), "tls_p50/plain_p50")
	b.ReportMetric(ratioOf(tp50, bp50), "tls_p50/bare_p50")
	b.ReportMetric(msOf(gp50), "prop_plain_p50_ms")
	b.ReportMetric(msOf(gp99), "prop_plain_p99_ms")
	b.ReportMetric(msOf(kp50), "prop_keyed_p50_ms")
	b.ReportMetric(msOf(kp99), "prop_keyed_p99_ms")
	b.ReportMetric(float64(len(tlsL)), "ops")
	b.ReportMetric(0, "ns/op")
}
