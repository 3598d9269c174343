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
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/benchrun"
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

func newIDGens(n int) []*benchrun.IDGen {
	gs := make([]*benchrun.IDGen, n)
	for i := range gs {
		gs[i] = benchrun.NewIDGen()
	}
	return gs
}

// storedValueSize is the size of the value the ledger stores for a
// benchEvent (its JSON with node and seq), used as the bare value size.
func storedValueSize() int {
	e := benchEvent(ids.New(time.Now())+"1", benchrun.Session(0), time.Now())
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

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openBare(b *testing.B) *pebble.DB {
	b.Helper()
	db, err := pebble.Open(b.TempDir(), &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest, Logger: quietPebble{}})
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
				sessions[w] = benchrun.Session(w)
			}
			seqs := make([]uint64, writers)
			gens := newIDGens(writers)
			benchrun.Interleave(b, writers, 1,
				&benchrun.Side{Name: "ledger", Op: func(w int) error {
					_, err := l.Append([]presence.Event{benchEvent(gens[w].Next(), sessions[w], time.Now())})
					return err
				}},
				&benchrun.Side{Name: "bare", Op: func(w int) error {
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
		sessions[k] = benchrun.Session(k)
	}
	db := openBare(b)
	defer db.Close()
	l := openBenchLedger(b)
	defer l.Close()
	gen := newIDGens(1)[0]
	seq := uint64(0)
	benchrun.Interleave(b, 1, batch,
		&benchrun.Side{Name: "ledger", Op: func(int) error {
			now := time.Now()
			evs := make([]presence.Event, batch)
			for k := range evs {
				evs[k] = benchEvent(gen.Next(), sessions[k], now)
			}
			_, err := l.Append(evs)
			return err
		}},
		&benchrun.Side{Name: "bare", Op: func(int) error {
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

// quietPebble is bare Pebble's logger in benchmarks: silent, and fatal
// as Pebble's own.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)           {}
func (quietPebble) Errorf(string, ...any)          {}
func (quietPebble) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
