package registry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// regApplier applies commands to a pure raftstore.Registry. fail makes
// the next calls fail; gate, when set, holds each call until it is closed.
type regApplier struct {
	mu    sync.Mutex
	reg   *raftstore.Registry
	idx   uint64
	calls int
	fail  error
	gate  chan struct{}
	enter chan struct{}
}

func newApplier() *regApplier { return &regApplier{reg: raftstore.NewRegistry()} }

func (a *regApplier) Apply(ctx context.Context, cmd raftstore.Command) (uint64, error) {
	a.mu.Lock()
	a.calls++
	gate, enter, fail := a.gate, a.enter, a.fail
	a.mu.Unlock()
	if enter != nil {
		enter <- struct{}{}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if fail != nil {
		return 0, fail
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.idx++
	return a.idx, a.reg.Apply(a.idx, cmd)
}

func (a *regApplier) Get(id string) (raftstore.Record, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reg.Get(id)
}

func (a *regApplier) callCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

func newWriter(a Applier, clk clock.Clock) *Writer {
	return New(Config{ActivityFlush: time.Second, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, a)
}

func session(id string) presence.State {
	s := presence.NewState(id)
	s.Node, s.Agent, s.Name, s.StartedAt, s.LastEventAt = "n1", "claude-code", "Flint", t0, t0
	s.Events = 1
	return s
}

func TestRecordMatchesEveryRegistryField(t *testing.T) {
	a := newApplier()
	w := newWriter(a, clock.NewFake(t0))
	s := session("s1")
	s.Task, s.Activity, s.ActivityUpdatedAt = "fix the build", presence.ActivityWorking, t0
	if err := w.Sync(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	rec, ok := a.Get("s1")
	if !ok || !RecordMatches(&rec, &s) {
		t.Fatalf("the written record %+v does not match its state", rec)
	}
	for name, change := range map[string]func(*presence.State){
		"node":      func(s *presence.State) { s.Node = "n2" },
		"agent":     func(s *presence.State) { s.Agent = "codex" },
		"name":      func(s *presence.State) { s.Name = "Opal" },
		"parent":    func(s *presence.State) { s.ParentSessionID = "p" },
		"task":      func(s *presence.State) { s.Task = "other" },
		"taskstate": func(s *presence.State) { s.TaskState = presence.TaskBlocked },
		"reason":    func(s *presence.State) { s.LifecycleReason = "why" },
		"ended":     func(s *presence.State) { s.Ended = true },
		"endreason": func(s *presence.State) { s.EndReason = "x" },
		"activity":  func(s *presence.State) { s.Activity = presence.ActivityIdle },
	} {
		c := s
		change(&c)
		if RecordMatches(&rec, &c) {
			t.Errorf("%s: a record that differs matches", name)
		}
	}
}

func TestSyncWritesOnceAndTakesOverThePendingChange(t *testing.T) {
	a := newApplier()
	w := newWriter(a, clock.NewFake(t0))
	s := session("s1")
	w.Observe(s) // urgent: a start, pending for the background writer
	if err := w.Sync(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := a.callCount(); got != 1 {
		t.Fatalf("%d registry writes, want 1 (Sync takes the pending change over)", got)
	}
	// Nothing changed: a second Sync writes nothing.
	if err := w.Sync(context.Background(), s); err != nil || a.callCount() != 1 {
		t.Fatalf("repeated Sync wrote again (%d calls, %v)", a.callCount(), err)
	}
}

func TestSyncWaitsForTheSameChangeAlreadyInFlight(t *testing.T) {
	a := newApplier()
	a.gate, a.enter = make(chan struct{}), make(chan struct{}, 1)
	w := newWriter(a, clock.NewFake(t0))
	s := session("s1")
	w.Observe(s)
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush() }()
	<-a.enter // the background flush is writing s
	synced := make(chan error, 1)
	go func() { synced <- w.Sync(context.Background(), s) }()
	close(a.gate)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if got := a.callCount(); got != 1 {
		t.Fatalf("%d registry writes, want 1 (Sync waits for the flush)", got)
	}
}

func TestSyncFailureHandsTheChangeBack(t *testing.T) {
	a := newApplier()
	a.fail = errors.New("no leader")
	w := newWriter(a, clock.NewFake(t0))
	s := session("s1")
	w.Observe(s)
	if err := w.Sync(context.Background(), s); err == nil {
		t.Fatal("Sync reported success while the registry failed")
	}
	a.mu.Lock()
	a.fail = nil
	a.mu.Unlock()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Get("s1"); !ok {
		t.Fatal("the change Sync gave back was never written")
	}
}

func TestHeldSessionIsLeftToItsDeclaration(t *testing.T) {
	a := newApplier()
	w := newWriter(a, clock.NewFake(t0))
	s := session("s1")
	release := w.Hold("s1")
	w.Observe(s)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if a.callCount() != 0 {
		t.Fatal("the background writer wrote a held session")
	}
	release()
	if err := w.Flush(); err != nil || a.callCount() != 1 {
		t.Fatalf("after release: %d writes, %v", a.callCount(), err)
	}
}

func TestActivityAloneWaitsForTheFlushTick(t *testing.T) {
	a := newApplier()
	clk := clock.NewFake(t0)
	w := newWriter(a, clk)
	s := session("s1")
	if err := w.Sync(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { w.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()
	clk.BlockUntil(1, 5*time.Second)
	s.Activity, s.ActivityUpdatedAt = presence.ActivityWorking, t0.Add(time.Millisecond)
	w.Observe(s) // not urgent: no kick
	clk.Advance(999 * time.Millisecond)
	if a.callCount() != 1 {
		t.Fatal("an activity change was written before the flush tick")
	}
	clk.Advance(time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for a.callCount() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if rec, _ := a.Get("s1"); rec.Activity != string(presence.ActivityWorking) {
		t.Fatalf("activity %q after the tick", rec.Activity)
	}
}

func TestResyncQueuesOnlyWhatDiffers(t *testing.T) {
	a := newApplier()
	w := newWriter(a, clock.NewFake(t0))
	same, diff := session("same"), session("diff")
	for _, s := range []presence.State{same, diff} {
		if err := w.Sync(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	w2 := newWriter(a, clock.NewFake(t0)) // a restart: nothing sent yet
	diff.Task = "changed while the registry was away"
	w2.Resync([]presence.State{same, diff}, a)
	before := a.callCount()
	if err := w2.Flush(); err != nil {
		t.Fatal(err)
	}
	if a.callCount() != before+1 {
		t.Fatalf("resync wrote %d commands", a.callCount()-before)
	}
	if rec, _ := a.Get("diff"); rec.Task != diff.Task {
		t.Fatalf("task %q", rec.Task)
	}
}
