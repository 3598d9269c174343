package ledger

// Benchmarks of the ledger beside bare Pebble in the same run (make bench).
// Each benchmark runs both sides interleaved: b.N events on each, in
// alternating chunks (the side that goes first alternates too), so that the
// disk's drift over the run falls on both alike. It reports the events/s of
// each side and their ratio. Benchmarks report; they never fail on speed.

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/ids"
)

// benchWriters are the concurrencies measured: one hook at a time, a busy
// machine, a storm.
var benchWriters = []int{1, 8, 64}

// benchEvent is a realistic tool.pre_use as a Claude Code hook sends it
// (attrs: native event, cwd, keyed digest, tool, agent pid and start).
func benchEvent(id, session string, now time.Time) presence.Event {
	return presence.Event{
		ID: id, SessionID: session, Type: presence.TypeToolPreUse, TS: now, Agent: "claude-code",
		Attrs: map[string]any{
			"native": "PreToolUse", presence.AttrCwd: "/home/ana/shop",
			presence.AttrDigest: "6f1c2a9e0b7d4e3f8a5c1d2e3f4a5b6c", presence.AttrTool: "Bash",
			presence.AttrAgentPID: float64(48213), presence.AttrAgentStart: float64(1723456789),
		},
	}
}

// benchSession is the session id of writer w: Claude Code's UUID shape.
func benchSession(w int) string {
	return fmt.Sprintf("8a1f0c2e-5b7d-4e21-9c3a-%012d", w)
}

// idGen makes unique, time-ordered event ids without the process-wide lock
// of ids.New: a ULID per writer as a prefix, then a counter.
type idGen struct {
	base string
	n    uint64
}

func (g *idGen) next() string {
	g.n++
	return g.base + strconv.FormatUint(g.n, 36)
}

func newIDGens(n int) []*idGen {
	gs := make([]*idGen, n)
	for i := range gs {
		gs[i] = &idGen{base: ids.New(time.Now())}
	}
	return gs
}

// storedValueSize is the size of the value the ledger stores for a
// benchEvent (its JSON with node and seq), used as the bare value size.
func storedValueSize() int {
	e := benchEvent(ids.New(time.Now())+"1", benchSession(0), time.Now())
	e.Node, e.Seq = "buildbox", 17
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return len(b)
}

func benchValue(size int) []byte {
	v := make([]byte, size)
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
	return v
}

// side is one contender of an interleaved benchmark. op(w) performs one
// operation as writer w; writers never share a w at the same time.
type side struct {
	name string
	op   func(w int) error
	el   time.Duration
	n    int
}

// runChunk runs k operations over writers goroutines and returns the wall
// time.
func runChunk(writers, k int, op func(w int) error) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for next.Add(1) <= int64(k) {
				if err := op(w); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	el := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return el, err
	}
	return el, nil
}

// interleave runs b.N operations on each side in alternating chunks and
// reports <side>-events/s for both and the ratio sides[0]/sides[1].
// perOp is the number of events one operation stores.
func interleave(b *testing.B, writers, perOp int, a, bare *side) {
	b.Helper()
	chunk := max(256, 16*writers)
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		k := min(chunk, b.N-done)
		order := []*side{a, bare}
		if round%2 == 1 {
			order = []*side{bare, a}
		}
		for _, s := range order {
			el, err := runChunk(writers, k, s.op)
			if err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			s.el += el
			s.n += k
		}
		done += k
	}
	b.StopTimer()
	ra := float64(a.n*perOp) / a.el.Seconds()
	rb := float64(bare.n*perOp) / bare.el.Seconds()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ra, a.name+"-events/s")
	b.ReportMetric(rb, bare.name+"-events/s")
	b.ReportMetric(ra/rb, a.name+"/"+bare.name)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openBare(b *testing.B) *pebble.DB {
	b.Helper()
	db, err := pebble.Open(b.TempDir(), &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest, Logger: pebbleLogger{quietLogger()}})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

func openBenchLedger(b *testing.B) *Ledger {
	b.Helper()
	l, err := Open(Config{Dir: b.TempDir(), Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkAppend measures durable single-event appends (each Append is one
// synced commit; concurrent writers share syncs) beside bare Pebble doing
// db.Set(k, v, pebble.Sync) of one key with a value of the same size, at 1,
// 8 and 64 concurrent writers, each writer on its own session.
func BenchmarkAppend(b *testing.B) {
	val := benchValue(storedValueSize())
	for _, writers := range benchWriters {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db := openBare(b)
			defer db.Close()
			l := openBenchLedger(b)
			defer l.Close()
			sessions := make([]string, writers)
			for w := range sessions {
				sessions[w] = benchSession(w)
			}
			seqs := make([]uint64, writers)
			gens := newIDGens(writers)
			interleave(b, writers, 1,
				&side{name: "ledger", op: func(w int) error {
					_, err := l.Append([]presence.Event{benchEvent(gens[w].next(), sessions[w], time.Now())})
					return err
				}},
				&side{name: "bare", op: func(w int) error {
					seqs[w]++
					return db.Set(eventKey(sessions[w], seqs[w]), val, pebble.Sync)
				}})
		})
	}
}

// BenchmarkAppendBatch100 measures appends of 100 events in one call (the
// spool drain, bulk imports) beside a bare synced Pebble batch of 100 keys
// with values of the same size.
func BenchmarkAppendBatch100(b *testing.B) {
	const batch = 100
	val := benchValue(storedValueSize())
	sessions := make([]string, batch)
	for k := range sessions {
		sessions[k] = benchSession(k)
	}
	db := openBare(b)
	defer db.Close()
	l := openBenchLedger(b)
	defer l.Close()
	gen := newIDGens(1)[0]
	seq := uint64(0)
	interleave(b, 1, batch,
		&side{name: "ledger", op: func(int) error {
			now := time.Now()
			evs := make([]presence.Event, batch)
			for k := range evs {
				evs[k] = benchEvent(gen.next(), sessions[k], now)
			}
			_, err := l.Append(evs)
			return err
		}},
		&side{name: "bare", op: func(int) error {
			bt := db.NewBatch()
			seq++
			for k := 0; k < batch; k++ {
				_ = bt.Set(eventKey(sessions[k], seq), val, nil)
			}
			err := bt.Commit(pebble.Sync)
			bt.Close()
			return err
		}})
}
