package raftstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkApply: sequential Apply latency through the Store (3 stores,
// TCP on loopback, bolt, DefaultConfig timers) beside a bare raft.Apply
// (3 plain raft servers, same timers, bolt, raft's TCP transport, no-op
// FSM), interleaved in one run. Reported as p50/p99 and their ratios.
func BenchmarkApply(b *testing.B) {
	if testing.Short() {
		b.Skip("starts two 3-server clusters over TCP")
	}
	cfg := DefaultConfig()
	stores := startTCP(b, 3, cfg)
	rafts := StartBareRaft(b, 3, cfg)
	store, bare := tcpLeader(b, stores), BareLeader(b, rafts)

	cmd := func(i int) Command {
		return UpsertCommand(Upsert{SessionID: fmt.Sprintf("s%d", i%64), TS: at(i + 1),
			Lifecycle: &LifecyclePatch{TaskState: "blocked", Reason: fmt.Sprintf("waiting on review %d", i)}})
	}
	apply := func(i int) (time.Duration, time.Duration) {
		c := cmd(i)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		t0 := time.Now()
		if _, err := store.Apply(ctx, c); err != nil {
			b.Fatal(err)
		}
		d1 := time.Since(t0)
		entry, _ := EncodeCommand(c) // same bytes for the bare side
		t0 = time.Now()
		if err := bare.Apply(entry, 10*time.Second).Error(); err != nil {
			b.Fatal(err)
		}
		return d1, time.Since(t0)
	}
	for i := range 20 { // warm the connections and caches
		apply(-i - 1)
	}
	storeLat := make([]time.Duration, 0, b.N)
	bareLat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		d1, d2 := apply(i)
		storeLat, bareLat = append(storeLat, d1), append(bareLat, d2)
	}
	b.StopTimer()
	sp50, sp99 := percentile(storeLat, 0.50), percentile(storeLat, 0.99)
	rp50, rp99 := percentile(bareLat, 0.50), percentile(bareLat, 0.99)
	b.ReportMetric(ms(sp50), "store-p50-ms")
	b.ReportMetric(ms(sp99), "store-p99-ms")
	b.ReportMetric(ms(rp50), "raft-p50-ms")
	b.ReportMetric(ms(rp99), "raft-p99-ms")
	b.ReportMetric(float64(sp50)/float64(rp50), "p50-ratio")
	b.ReportMetric(float64(sp99)/float64(rp99), "p99-ratio")
}
