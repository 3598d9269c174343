//go:build unix

package node

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// BenchmarkPresenceSigning measures what signed presence costs, in one
// run: two 5-node meshes with a CA (mesh init, join tokens, mutual TLS on
// raft and the cluster gRPC, LAN timers), one signing its gossip and one
// not (ClusterConfig.unsignedGossip), otherwise the same.
//
//   - propagation: node.Ingest of an activity change on one node until
//     every other node holds the new version from gossip, both meshes
//     side by side, rounds interleaved (as BenchmarkPresencePropagation);
//   - idle CPU: the process's CPU time (getrusage) over an idle window
//     with only one mesh running, in the order signed, unsigned, signed,
//     unsigned (fresh meshes for each window after the first), so that a
//     drift in the machine's load falls on both.
//
// Reports p50/p99 of each, the idle CPU per node in ms per second, and
// signed/unsigned ratios. Run with -benchtime=1x; skipped under -short.
func BenchmarkPresenceSigning(b *testing.B) {
	if testing.Short() {
		b.Skip("starts 5-node meshes over TCP; skipped under -short")
	}
	const n, rounds = 5, 40
	window := 20 * time.Second
	signed := startSigningMesh(b, n, false)
	unsigned := startSigningMesh(b, n, true)

	sid := func(i int) string { return fmt.Sprintf("ps-%d", i) }
	for _, tm := range []*trustMesh{signed, unsigned} {
		for i, nd := range tm.nodes {
			cbIngest(b, nd, sid(i), presence.TypeSessionStart, nil)
		}
	}
	mesh.WaitFor(b, 60*time.Second, "every session gossiped everywhere", func() bool {
		for _, tm := range []*trustMesh{signed, unsigned} {
			for i, a := range tm.nodes {
				for j, o := range tm.nodes {
					if i != j && remoteVersion(o, a.Name(), sid(i)) == 0 {
						return false
					}
				}
			}
		}
		return true
	})
	needsInput := map[*Node]bool{}
	round := func(tm *trustMesh, r int) (time.Duration, bool) {
		origin := tm.nodes[r%n]
		typ := presence.TypeInputResolved
		if !needsInput[origin] {
			typ = presence.TypeInputRequested
		}
		needsInput[origin] = !needsInput[origin]
		s := sid(r % n)
		sent := time.Now()
		cbIngest(b, origin, s, typ, nil)
		v := sentVersion(origin, s)
		for time.Since(sent) < harnPropCap {
			all := true
			for _, o := range tm.nodes {
				if o != origin && remoteVersion(o, origin.Name(), s) < v {
					all = false
					break
				}
			}
			if all {
				return time.Since(sent), true
			}
			time.Sleep(time.Millisecond)
		}
		return harnPropCap, false
	}
	var sigS, plainS []time.Duration
	sigMiss, plainMiss := 0, 0
	pause := func() { time.Sleep(50*time.Millisecond + rand.N(200*time.Millisecond)) }
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		order := []bool{true, false}
		if r%2 == 1 {
			order = []bool{false, true}
		}
		for _, sign := range order {
			tm, out, miss := unsigned, &plainS, &plainMiss
			if sign {
				tm, out, miss = signed, &sigS, &sigMiss
			}
			d, ok := round(tm, r)
			*out = append(*out, d)
			if !ok {
				*miss++
			}
			pause()
		}
	}
	b.StopTimer()

	// Idle CPU, one mesh at a time.
	unsigned.close()
	idle := map[bool][]float64{}
	cur := signed
	for k, sign := range []bool{true, false, true, false} {
		if k > 0 {
			cur = startSigningMesh(b, n, !sign)
		}
		time.Sleep(5 * time.Second) // joins and first push/pulls settle
		idle[sign] = append(idle[sign], cpuPerNode(window, n))
		cur.close()
	}

	sp50, sp99, smax := cbPercentiles(sigS)
	pp50, pp99, pmax := cbPercentiles(plainS)
	b.ReportMetric(msOf(sp50), "signed_p50_ms")
	b.ReportMetric(msOf(sp99), "signed_p99_ms")
	b.ReportMetric(msOf(smax), "signed_max_ms")
	b.ReportMetric(msOf(pp50), "unsigned_p50_ms")
	b.ReportMetric(msOf(pp99), "unsigned_p99_ms")
	b.ReportMetric(msOf(pmax), "unsigned_max_ms")
	b.ReportMetric(float64(sigMiss), "signed_misses")
	b.ReportMetric(float64(plainMiss), "unsigned_misses")
	b.ReportMetric(ratioOf(sp50, pp50), "signed/unsigned_p50")
	b.ReportMetric(ratioOf(sp99, pp99), "signed/unsigned_p99")
	si, ui := mean(idle[true]), mean(idle[false])
	b.ReportMetric(si, "signed_idle_cpu_ms/s/node")
	b.ReportMetric(ui, "unsigned_idle_cpu_ms/s/node")
	b.ReportMetric(si/max(ui, 1e-9), "signed/unsigned_idle_cpu")
	b.ReportMetric(0, "ns/op")
	b.Logf("idle CPU ms/s/node: signed %v, unsigned %v", idle[true], idle[false])
}

// startSigningMesh is a 5-node mesh with a CA and LAN timers, gossip
// signed or not.
func startSigningMesh(b *testing.B, n int, unsignedGossip bool) *trustMesh {
	b.Helper()
	lan := func(cfg *Config) {
		d := DefaultClusterConfig()
		cc := &cfg.Cluster
		cc.MeshProfile, cc.RaftProfile = d.MeshProfile, d.RaftProfile
		cc.PresenceRefresh, cc.ActivityFlush, cc.TrustSync = d.PresenceRefresh, d.ActivityFlush, d.TrustSync
		cc.UnsignedGossip = unsignedGossip
	}
	tm, _ := startTrustMeshWith(b, lan)
	tok := tm.token(false, 0, 0)
	for i := 1; i < n; i++ {
		tm.join(fmt.Sprintf("tw%d", i), tok, false)
	}
	mesh.WaitFor(b, 60*time.Second, "every node alive everywhere", func() bool {
		for _, nd := range tm.nodes {
			if nd.cl.Parts().Mesh.NumAlive() != n {
				return false
			}
		}
		return true
	})
	if !unsignedGossip {
		mesh.WaitFor(b, 90*time.Second, "every node knows every other's certificate", func() bool {
			for _, a := range tm.nodes {
				for _, o := range tm.nodes {
					if a != o && !a.cl.Parts().Signer.Known(o.Name()) {
						return false
					}
				}
			}
			return true
		})
	}
	return tm
}

// cpuPerNode is the process's CPU time over window, in ms per second per
// node.
func cpuPerNode(window time.Duration, n int) float64 {
	before, t0 := cpuTime(), time.Now()
	time.Sleep(window)
	used, wall := cpuTime()-before, time.Since(t0)
	return msOf(used) / wall.Seconds() / float64(n)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// BenchmarkGossipSignVerify: one signature of a delta-sized message with
// the node's certificate key, and one check of it by a peer that knows
// the certificate (the work a delta costs its origin and each receiver).
func BenchmarkGossipSignVerify(b *testing.B) {
	now := time.Now()
	ca, err := trust.NewCA(now.Add(-time.Hour), trust.DefaultCATTL)
	if err != nil {
		b.Fatal(err)
	}
	key, err := trust.NewKey()
	if err != nil {
		b.Fatal(err)
	}
	c, err := ca.Issue(key.Public(), "a", trust.RoleNode, time.Hour, now)
	if err != nil {
		b.Fatal(err)
	}
	tc := trust.TLSCertificate(c, key)
	roots := trust.NewRoots(ca.Cert)
	s := meshtrust.NewSigner(trust.NewHolder(&tc, roots), trust.NewRevocationList(), clock.Real{})
	peer := meshtrust.NewSigner(trust.NewHolder(&tc, roots), trust.NewRevocationList(), clock.Real{})
	if err := peer.Learn("a", s.Credentials()); err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 500)
	sig, _ := s.Sign(msg)
	b.Run("sign", func(b *testing.B) {
		for range b.N {
			if _, err := s.Sign(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		for range b.N {
			if err := peer.Verify("a", msg, sig); err != nil {
				b.Fatal(err)
			}
		}
	})
}
