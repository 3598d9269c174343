package raftstore

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// nopFSM is the bare side's state machine: it does nothing.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnap{}, nil }
func (nopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type nopSnap struct{}

func (nopSnap) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (nopSnap) Release()                             {}

// startBareRaft starts n plain raft servers on loopback TCP with bolt
// stores, raft's own TCP transport and a no-op FSM, on cfg's timers.
func startBareRaft(b *testing.B, n int, cfg Config) []*raft.Raft {
	b.Helper()
	dir := b.TempDir()
	var rafts []*raft.Raft
	var conf raft.Configuration
	for i := range n {
		id := fmt.Sprintf("bare%d", i)
		d := filepath.Join(dir, id)
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
		bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(d, "raft.db")})
		if err != nil {
			b.Fatal(err)
		}
		snaps, err := raft.NewFileSnapshotStore(d, 2, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, cfg.MaxPool, cfg.IOTimeout, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		c := cfg
		c.ID = id
		rc := c.raftConfig()
		rc.LogOutput = io.Discard
		r, err := raft.NewRaft(rc, nopFSM{}, bolt, bolt, snaps, trans)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			r.Shutdown().Error()
			trans.Close()
			bolt.Close()
		})
		rafts = append(rafts, r)
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(id), Address: trans.LocalAddr(), Suffrage: raft.Voter})
	}
	for _, r := range rafts {
		if err := r.BootstrapCluster(conf).Error(); err != nil {
			b.Fatal(err)
		}
	}
	return rafts
}

func bareLeader(b *testing.B, rafts []*raft.Raft) *raft.Raft {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range rafts {
			if r.State() == raft.Leader {
				return r
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatal("no bare raft leader")
	return nil
}

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
	rafts := startBareRaft(b, 3, cfg)
	store, bare := tcpLeader(b, stores), bareLeader(b, rafts)

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
