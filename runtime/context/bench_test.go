package context

import (
	stdctx "context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// buildLane appends n items (a prompt, then exchanges of two items) with
// compaction as the loop would run it, over budget tokens.
func buildLane(b *testing.B, sp *Space, session string, n, budget int) *Lane {
	b.Helper()
	l, err := sp.Open(session, "")
	if err != nil {
		b.Fatal(err)
	}
	_ = l.Append(user("t1", "go"))
	for i := 1; i < n; i += 2 {
		id := fmt.Sprintf("c%d", i)
		if err := l.Append(call("t1", id, "read", `{"path":"f"}`), result("t1", id, filler(400, i))); err != nil {
			b.Fatal(err)
		}
		if budget > 0 {
			if _, err := l.WorkingSet(stdctx.Background(), "t1", budget); err != nil {
				b.Fatal(err)
			}
		}
	}
	return l
}

func p99(ds []time.Duration) float64 {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return float64(ds[len(ds)*99/100]) / 1e6
}

// BenchmarkContext measures the room against a plain Pebble append of the
// same bytes, in the same run (docs/perf.md, "Context").
func BenchmarkContext(b *testing.B) {
	const items = 10_000
	st := openPebble(b, "")
	sp := NewSpace(st, Options{NoSync: true})
	l := buildLane(b, sp, "big", items, 60_000)

	b.Run("working_set_10k", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if _, err := l.WorkingSet(stdctx.Background(), "t1", 60_000); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		b.ReportMetric(p99(ds), "p99-ms")
	})

	// a checkpoint over 10k uncompacted items: each iteration forks the
	// lane (copies nothing) and compacts the fork, stored with a sync
	flat := buildLane(b, sp, "flat", items, 0)
	forks := 0
	b.Run("checkpoint_10k", func(b *testing.B) {
		sp.opts.NoSync = false
		defer func() { sp.opts.NoSync = true }()
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			forks++
			f, err := sp.Fork(fmt.Sprintf("fork%d", forks), flat.Session(), UpToHead)
			if err != nil {
				b.Fatal(err)
			}
			used := f.ProviderView()
			budget := viewTokens(used) / 2
			b.StartTimer()
			t0 := time.Now()
			sp.mu.Lock()
			_, err, ok := f.fallbackLocked(budget, budget*targetPct/100, "", nil)
			sp.mu.Unlock()
			ds = append(ds, time.Since(t0))
			if err != nil || !ok {
				b.Fatal("no checkpoint", err)
			}
		}
		b.ReportMetric(p99(ds), "p99-ms")
	})

	out := filler(1<<20, 7)
	big, _ := sp.Open("recall", "")
	sp.opts.NoSync = false
	_ = big.Append(user("t1", "go"), call("t1", "c1", "read", `{}`), result("t1", "c1", out))
	sp.opts.NoSync = true
	_ = st.db.Flush() // recall reads tables, as after a restart
	ref := big.Report().Items[2].Ref
	b.Run("recall_1MB", func(b *testing.B) {
		b.SetBytes(1 << 20)
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			got, _, err := big.Recall(ref, 0, -1)
			ds = append(ds, time.Since(t0))
			if err != nil || len(got) != 1<<20 {
				b.Fatal(err)
			}
		}
		b.ReportMetric(p99(ds), "p99-ms")
	})
	// bare Pebble the same way: one iterator over the same chunk keys,
	// copying the values into one buffer; and one Get of the same 1 MB as
	// a single value, flushed to a table like the chunks
	seq, _ := parseRef(ref)
	b.Run("pebble_iter_same_chunks_1MB", func(b *testing.B) {
		b.SetBytes(1 << 20)
		lo := blobPrefix("recall", seq)
		for i := 0; i < b.N; i++ {
			it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: upper(lo)})
			if err != nil {
				b.Fatal(err)
			}
			out := make([]byte, 0, 1<<20)
			for ok := it.First(); ok; ok = it.Next() {
				out = append(out, it.Value()...)
			}
			_ = it.Close()
			if len(out) != 1<<20 {
				b.Fatal(len(out))
			}
		}
	})
	b.Run("pebble_get_1MB", func(b *testing.B) {
		_ = st.db.Set([]byte("plain/1mb"), []byte(out), pebble.Sync)
		_ = st.db.Flush()
		b.SetBytes(1 << 20)
		for i := 0; i < b.N; i++ {
			v, closer, err := st.db.Get([]byte("plain/1mb"))
			if err != nil || len(v) != 1<<20 {
				b.Fatal(err)
			}
			_ = append([]byte(nil), v...)
			_ = closer.Close()
		}
	})

	// an append (one exchange, synced) against Pebble sets of the same
	// bytes, synced the same way
	sp.opts.NoSync = false
	ap, _ := sp.Open("append", "")
	_ = ap.Append(user("t1", "go"))
	b.Run("append_exchange", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			id := fmt.Sprintf("c%d", i)
			if err := ap.Append(call("t1", id, "read", `{"path":"f"}`), result("t1", id, filler(400, i))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pebble_append_same_bytes", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			id := fmt.Sprintf("c%d", i)
			c, _ := json.Marshal(call("t1", id, "read", `{"path":"f"}`))
			r, _ := json.Marshal(result("t1", id, filler(400, i)))
			k := binary.BigEndian.AppendUint64([]byte("plain/"), uint64(i))
			_ = st.db.Set(append(k, 'c'), c, pebble.NoSync)
			_ = st.db.Set(append(k, 'b'), []byte(filler(400, i)), pebble.NoSync)
			if err := st.db.Set(append(k, 'r'), r, pebble.Sync); err != nil {
				b.Fatal(err)
			}
		}
	})

	// storage cost: the keys and values of the 10k-item tree against the
	// messages' own JSON
	b.Run("bytes_per_item", func(b *testing.B) {
		var stored, raw, n int
		_ = st.Scan(treePrefix("flat"), func(k, v []byte) error { stored += len(k) + len(v); return nil })
		for _, m := range flat.History() {
			js, _ := json.Marshal(m)
			raw += len(js)
			n++
		}
		for i := 0; i < b.N; i++ {
		}
		b.ReportMetric(float64(stored)/float64(n), "stored-B/item")
		b.ReportMetric(float64(raw)/float64(n), "message-B/item")
	})
}
