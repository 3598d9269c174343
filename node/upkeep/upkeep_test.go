package upkeep

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

type fakeProcs struct {
	mu   sync.Mutex
	dead map[int]bool
}

func (p *fakeProcs) Alive(pid int, _ uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.dead[pid]
}

// TestTheReapLoopEndsASessionOnlyAtItsTick: a session whose agent process
// is gone ends at the reap loop's next tick (process_gone), not before;
// Close stops the loops and is safe twice.
func TestTheReapLoopEndsASessionOnlyAtItsTick(t *testing.T) {
	l, err := ledger.Open(ledger.DefaultConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clock.NewFake(t0)
	sess := sessions.New(sessions.Config{Node: "n", Ledger: l, Clock: clk})
	ingest := func(evs []presence.Event) error { _, err := sess.Ingest(context.Background(), evs); return err }
	if err := ingest([]presence.Event{{ID: "e1", SessionID: "s", Type: presence.TypeUserPromptSubmit, TS: t0, Agent: "claude-code",
		Attrs: map[string]any{presence.AttrAgentPID: 4242, presence.AttrAgentStart: 99}}}); err != nil {
		t.Fatal(err)
	}
	procs := &fakeProcs{dead: map[int]bool{}}
	k := New(Deps{DataDir: t.TempDir(), Clock: clk, Log: slog.New(slog.DiscardHandler), Ledger: l, Sessions: sess,
		Ingest: ingest, Procs: procs, SpoolInterval: time.Hour, ReapInterval: time.Second})
	k.Run()
	defer k.Close()
	if !clk.BlockUntil(2, 10*time.Second) {
		t.Fatal("the loops never waited on their tickers")
	}
	procs.mu.Lock()
	procs.dead[4242] = true
	procs.mu.Unlock()
	if st, err := sess.Resolve("s"); err != nil || st.Ended {
		t.Fatalf("ended before the tick: %+v %v", st, err)
	}
	clk.Advance(time.Second)
	var st presence.State
	for i := 0; i < 1000; i++ {
		if st, err = sess.Resolve("s"); err == nil && st.Ended {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !st.Ended || st.EndReason != ReasonProcessGone {
		t.Fatalf("after the tick: %+v", st)
	}
	k.Close()
	k.Close()
}
