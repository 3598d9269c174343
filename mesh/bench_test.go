package mesh

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// BenchmarkPropagation measures, on real loopback UDP/TCP with LAN timers,
// the time from a Broadcast on one node until every other node has the
// delta, for three meshes running side by side in the same process:
//
//   - harn: this package as harn runs it (scaled retransmits, re-gossip,
//     direct reliable sends in meshes of up to DirectSendMax members);
//   - harn-gossip: the same with DirectSendMax = 0, gossip alone;
//   - bare: plain memberlist with a TransmitLimitedQueue at memberlist's
//     default RetransmitMult, each node re-queueing a message the first time
//     it sees it (the usual epidemic pattern, as serf does for user events).
//
// A round that has not reached every node within propCap counts as a miss
// (in production such a node waits for the next push/pull, 15–60 s on LAN)
// and enters the percentiles as propCap. It runs a fixed number of rounds
// (b.N is not used; run with -benchtime=1x) and skips under -short.
func BenchmarkPropagation(b *testing.B) {
	if testing.Short() {
		b.Skip("real-network benchmark; skipped under -short")
	}
	for _, sz := range []struct{ nodes, rounds int }{{5, 40}, {20, 25}} {
		b.Run(fmt.Sprintf("nodes=%d", sz.nodes), func(b *testing.B) {
			benchPropagation(b, sz.nodes, sz.rounds)
		})
	}
}

const (
	propCap     = 3 * time.Second
	propPayload = 200 // bytes: a typical presence delta
)

// propTarget is one mesh under measurement.
type propTarget struct {
	name      string
	n         int
	broadcast func(origin int, id string) error
	tracker   *PropTracker
	samples   []time.Duration
	misses    int
	close     func()
}

func benchPropagation(b *testing.B, n, rounds int) {
	targets := []*propTarget{
		newHarnTarget(b, "harn", n, 32),
		newHarnTarget(b, "harn-gossip", n, 0),
		newBareTarget(b, n),
	}
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		for _, t := range targets { // interleaved: the same load for all
			t.round(b, r)
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	stats := map[string][3]time.Duration{}
	for _, t := range targets {
		p50, p99, mx := percentiles(t.samples)
		stats[t.name] = [3]time.Duration{p50, p99, mx}
		b.ReportMetric(ms(p50), t.name+"_p50_ms")
		b.ReportMetric(ms(p99), t.name+"_p99_ms")
		b.ReportMetric(ms(mx), t.name+"_max_ms")
		b.ReportMetric(float64(t.misses), t.name+"_misses")
	}
	ratio := func(a, h time.Duration) float64 { return float64(a) / float64(max(h, time.Microsecond)) }
	b.ReportMetric(ratio(stats["bare"][0], stats["harn"][0]), "bare/harn_p50")
	b.ReportMetric(ratio(stats["bare"][1], stats["harn"][1]), "bare/harn_p99")
	b.ReportMetric(ratio(stats["bare"][2], stats["harn"][2]), "bare/harn_max")
	b.ReportMetric(0, "ns/op")
}

func (t *propTarget) round(b *testing.B, r int) {
	origin := r % t.n
	id := fmt.Sprintf("%s-%d", t.name, r)
	done := t.tracker.Start(id, origin, t.n-1)
	sent := time.Now()
	if err := t.broadcast(origin, id); err != nil {
		b.Fatal(err)
	}
	timer := time.NewTimer(propCap)
	defer timer.Stop()
	select {
	case last := <-done:
		t.samples = append(t.samples, last.Sub(sent))
	case <-timer.C:
		t.misses++
		t.samples = append(t.samples, propCap)
	}
	// A random pause between rounds, so that broadcasts do not lock onto
	// the phase of the 200 ms gossip tickers.
	time.Sleep(50*time.Millisecond + rand.N(200*time.Millisecond))
}

func percentiles(s []time.Duration) (p50, p99, mx time.Duration) {
	if len(s) == 0 {
		return 0, 0, 0
	}
	s = append([]time.Duration(nil), s...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), s[len(s)-1]
}

func lanBenchConfig(name string) Config {
	c := DefaultConfig() // LAN timers
	c.Name = name
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.JoinBackoffMin = 50 * time.Millisecond
	c.JoinBackoffMax = time.Second
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return c
}

func newHarnTarget(b *testing.B, name string, n, directMax int) *propTarget {
	t := &propTarget{name: name, n: n, tracker: &PropTracker{}}
	var meshes []*Mesh
	payload := make([]byte, propPayload)
	for i := 0; i < n; i++ {
		h := &RecordingHandler{}
		idx := i
		h.OnDelta = func(d Delivery) { t.tracker.Mark(idx, d.Key) }
		c := lanBenchConfig(fmt.Sprintf("%s-%d", name, i))
		c.DirectSendMax = directMax
		c.Handler = h
		if i > 0 {
			c.Join = []string{meshes[0].LocalAddr()}
		}
		m, err := New(c)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Start(); err != nil {
			b.Fatal(err)
		}
		meshes = append(meshes, m)
	}
	t.close = func() {
		for _, m := range meshes {
			_ = m.Shutdown()
		}
	}
	WaitFor(b, 30*time.Second, name+" converged", func() bool {
		for _, m := range meshes {
			if m.NumAlive() != n {
				return false
			}
		}
		return true
	})
	t.broadcast = func(origin int, id string) error {
		return meshes[origin].Broadcast(id, 1, payload)
	}
	return t
}

func newBareTarget(b *testing.B, n int) *propTarget {
	t := &propTarget{name: "bare", n: n, tracker: &PropTracker{}}
	bm := StartBareMesh(b, n, func(node int, id string) { t.tracker.Mark(node, id) })
	t.close = bm.Close
	t.broadcast = func(origin int, id string) error {
		bm.Broadcast(origin, id, propPayload)
		return nil
	}
	return t
}
