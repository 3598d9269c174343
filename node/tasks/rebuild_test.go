package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

var rebuildKey = bytes.Repeat([]byte{7}, 32)

// restart builds the host of the node's next run on the same store, as
// the node does at start: Recover, then Rebuild.
// fataler is what restart and fullGrants need of a test (testing.TB or
// rapid.T).
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func restart(t fataler, kv KV, ts time.Time, live []presence.State) *Host {
	t.Helper()
	h, err := New(Config{Node: "n1", KV: kv, Key: rebuildKey, Clock: clock.NewFake(ts), Sink: &captureSink{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Recover(live); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Rebuild(live); err != nil {
		t.Fatal(err)
	}
	return h
}

func fullGrants(t fataler) []runtime.Grant {
	g, err := runtime.Profile("full")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A task that was running when the node died is shown after the restart
// as interrupted (node restart) with its output so far; its queued
// follow-up is interrupted too and never starts.
func TestARunningTaskIsInterruptedWithItsOutputAfterARestart(t *testing.T) {
	kv := &memKV{}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h1, err := New(Config{Node: "n1", KV: kv, Key: rebuildKey, Clock: clock.NewFake(ts), Sink: &captureSink{}})
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Close()
	rt := h1.Runtime()
	if err := rt.OpenSession("s1", runtime.SessionConfig{Catalog: "claude-code"}); err != nil {
		t.Fatal(err)
	}
	run1, err := rt.Start("s1", runtime.Request{Text: "build it", By: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	h1.remember(run1.ID, "build it")
	h1.output("s1", run1.ID, "compiling")
	h1.output("s1", run1.ID, "linking")
	next, err := rt.FollowUp("s1", runtime.Request{Text: "test it", RequiresSuccess: true})
	if err != nil {
		t.Fatal(err)
	}

	live := []presence.State{{SessionID: "s1", Agent: "claude-code", Node: "n1", Events: 3}}
	h2 := restart(t, kv, ts.Add(time.Minute), live)
	defer h2.Close()
	res, err := h2.Do(Action{Op: OpShow, Task: run1.ID})
	if err != nil {
		t.Fatalf("show after the restart: %v", err)
	}
	if res.Task.State != runtime.StateInterrupted || res.Task.Reason != ReasonNodeRestart {
		t.Errorf("after the restart the task is %s (%s), want interrupted (node_restart)", res.Task.State, res.Task.Reason)
	}
	if want := []string{"compiling", "linking"}; !slices.Equal(res.Output, want) {
		t.Errorf("output so far %q, want %q", res.Output, want)
	}
	if res.Text != "build it" || res.Task.By != "ann" {
		t.Errorf("text %q by %q, want the task's own", res.Text, res.Task.By)
	}
	nv, err := h2.Runtime().Task(next.ID)
	if err != nil || nv.State != runtime.StateInterrupted {
		t.Errorf("the queued follow-up is %+v (%v), want interrupted", nv, err)
	}
	if _, ok := h2.Runtime().ActiveTask("s1"); ok {
		t.Error("a task runs in s1 after the restart; nothing may start on its own")
	}
	// An interrupted task is ended: it cannot be cancelled or resumed.
	if _, err := h2.Runtime().Cancel(run1.ID, "ann", ""); !errors.Is(err, runtime.ErrTaskTerminal) {
		t.Errorf("cancel of an interrupted task: %v, want ErrTaskTerminal", err)
	}
}

// An unknown-outcome hold survives a restart: the session's next task may
// not mutate until `harn task ack`, which is recorded after the restart.
func TestAnUnknownOutcomeHoldSurvivesARestart(t *testing.T) {
	kv := &memKV{}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fc := newSettleClock(ts)
	h1, err := New(Config{Node: "n1", KV: kv, Key: rebuildKey, Clock: fc, Sink: &captureSink{}, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Close()
	rt := h1.Runtime()
	if err := rt.OpenSession("s1", runtime.SessionConfig{Catalog: "claude-code"}); err != nil {
		t.Fatal(err)
	}
	t1 := mutateUnknown(t, rt, fc, "s1")

	live := []presence.State{{SessionID: "s1", Agent: "claude-code", Node: "n1", Events: 3}}
	h2 := restart(t, kv, ts.Add(time.Minute), live)
	defer h2.Close()
	rt2 := h2.Runtime()
	sv, err := rt2.Session("s1")
	if err != nil || !slices.Equal(sv.AwaitingAck, []string{t1}) {
		t.Fatalf("after the restart s1 awaits ack of %v (%v), want [%s]", sv.AwaitingAck, err, t1)
	}
	t2, err := rt2.Start("s1", runtime.Request{Text: "again", Grants: fullGrants(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt2.Check(t2.ID, runtime.CallRequest{ID: "c2", Capability: "Write", Input: []byte(`{"file_path":"a"}`)})
	var ack *runtime.AckRequiredError
	if !errors.As(err, &ack) || ack.Task != t1 {
		t.Fatalf("the successor's mutation after the restart: %v, want AckRequiredError naming %s", err, t1)
	}
	if err := rt2.Ack(t1, "ann"); err != nil {
		t.Fatalf("ack after the restart: %v", err)
	}
	if _, err := rt2.Check(t2.ID, runtime.CallRequest{ID: "c3", Capability: "Write", Input: []byte(`{"file_path":"a"}`)}); err != nil {
		t.Errorf("the mutation after the ack: %v, want allowed", err)
	}
	// The ack is in the ledger: a third run has no hold.
	h3 := restart(t, kv, ts.Add(2*time.Minute), live)
	defer h3.Close()
	if sv, _ := h3.Runtime().Session("s1"); len(sv.AwaitingAck) != 0 {
		t.Errorf("after an ack and another restart s1 awaits %v, want nothing", sv.AwaitingAck)
	}
}

// mutateUnknown runs a task whose Write call never reports and is
// cancelled past its grace: the call ends outcome_unknown.
func mutateUnknown(t testing.TB, rt *runtime.Runtime, fc *settleClock, session string) string {
	t.Helper()
	v, err := rt.Start(session, runtime.Request{Text: "write", Grants: fullGrants(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Begin(v.ID, runtime.CallRequest{ID: "c1", Capability: "Write", Input: []byte(`{"file_path":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Cancel(v.ID, "ann", ""); err != nil {
		t.Fatal(err)
	}
	fc.Advance(2 * time.Second)
	if tv, _ := rt.Task(v.ID); tv.State != runtime.StateTerminal {
		t.Fatalf("the cancelled task is %s past its grace, want terminal", tv.State)
	}
	return v.ID
}

// The records rebuilt from the ledger after a restart equal the records
// before it, for random sequences of task actions: same task, session,
// action, author, creation time and (for an ended task) status; a task
// not ended before is interrupted after; the sessions await the same
// acknowledgements, and one more where a mutating call was running when
// the node died (its outcome is unknown).
func TestPropertyRecordsRebuiltAfterARestartEqualTheRecordsBeforeIt(t *testing.T) {
	rapid.Check(t, func(rt0 *rapid.T) {
		kv := &memKV{}
		ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		fc := newSettleClock(ts)
		h1, err := New(Config{Node: "n1", KV: kv, Key: rebuildKey, Clock: fc, Sink: &captureSink{}, Grace: time.Second})
		if err != nil {
			rt0.Fatal(err)
		}
		defer h1.Close()
		rt := h1.Runtime()
		sessions := []string{"s1", "s2"}
		for _, s := range sessions {
			if err := rt.OpenSession(s, runtime.SessionConfig{Catalog: "claude-code"}); err != nil {
				rt0.Fatal(err)
			}
		}
		var ids []string
		runs := map[string]*runtime.Run{}
		calls := 0
		steps := rapid.IntRange(1, 40).Draw(rt0, "steps")
		for i := 0; i < steps; i++ {
			s := rapid.SampledFrom(sessions).Draw(rt0, "session")
			req := runtime.Request{Text: fmt.Sprintf("task %d", i), Grants: fullGrants(rt0),
				By: rapid.SampledFrom([]string{"", "ann", "bob"}).Draw(rt0, "by")}
			pick := func() string {
				if len(ids) == 0 {
					return "none"
				}
				return rapid.SampledFrom(ids).Draw(rt0, "task")
			}
			var v runtime.TaskView
			var err error
			switch rapid.IntRange(0, 8).Draw(rt0, "action") {
			case 0:
				v, err = rt.Start(s, req)
			case 1:
				req.RequiresSuccess = rapid.Bool().Draw(rt0, "requires")
				v, err = rt.FollowUp(s, req)
			case 2:
				v, err = rt.Supersede(s, req)
			case 3:
				_, _ = rt.Cancel(pick(), "ann", "")
			case 4: // the executor takes the running task
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				if r, err := rt.Next(ctx, s); err == nil {
					runs[r.Task] = r
				}
				cancel()
			case 5:
				if r := runs[pick()]; r != nil {
					_ = r.Finish(rapid.SampledFrom([]runtime.Status{runtime.StatusSucceeded, runtime.StatusFailed}).Draw(rt0, "status"), "")
				}
			case 6:
				if r := runs[pick()]; r != nil {
					calls++
					capName := rapid.SampledFrom([]string{"Write", "Read"}).Draw(rt0, "capability")
					_, _ = r.Begin(runtime.CallRequest{ID: fmt.Sprintf("c%d", calls), Capability: capName, Input: []byte(`{"file_path":"a"}`)})
				}
			case 7:
				fc.Advance(2 * time.Second) // graces pass: open calls end outcome_unknown
			case 8:
				_ = rt.Ack(pick(), "ann")
			}
			if err == nil && v.ID != "" {
				ids = append(ids, v.ID)
			}
		}
		before := map[string]runtime.TaskView{}
		for _, id := range ids {
			v, err := rt.Task(id)
			if err != nil {
				rt0.Fatalf("task %s before the restart: %v", id, err)
			}
			before[id] = v
		}
		acks := map[string][]string{}
		refusing := map[string]string{} // session -> the cancelled task refusing its calls
		for _, s := range sessions {
			sv, _ := rt.Session(s)
			acks[s] = sv.AwaitingAck
			if ct, err := rt.CancelledRefusal(s, "Write"); err != nil {
				refusing[s] = ct
			}
		}

		// A task the restart cuts short with a Write call running (begun,
		// never ended) holds its session's mutations after it: the call's
		// outcome is unknown.
		for _, id := range ids {
			if before[id].State == runtime.StateTerminal {
				continue
			}
			recs, _ := NewLedger(kv).Records(id)
			open := map[string]string{}
			for _, r := range recs {
				switch r.Kind {
				case runtime.RecBegin:
					open[r.Call] = r.Capability
				case runtime.RecEnd:
					delete(open, r.Call)
				}
			}
			for _, capName := range open {
				if capName == "Write" && !slices.Contains(acks[before[id].Session], id) {
					acks[before[id].Session] = append(acks[before[id].Session], id)
				}
			}
		}
		live := []presence.State{{SessionID: "s1", Agent: "claude-code", Node: "n1", Events: 1},
			{SessionID: "s2", Agent: "codex", Node: "n1", Events: 1}}
		h2 := restart(rt0, kv, ts.Add(time.Hour), live)
		defer h2.Close()
		for _, id := range ids {
			b := before[id]
			a, err := h2.Runtime().Task(id)
			if err != nil {
				rt0.Fatalf("task %s after the restart: %v", id, err)
			}
			if a.ID != b.ID || a.Session != b.Session || a.Action != b.Action || a.By != b.By || !a.CreatedAt.Equal(b.CreatedAt) {
				rt0.Fatalf("task %s: before %+v, after %+v", id, b, a)
			}
			if b.State == runtime.StateTerminal {
				if a.State != runtime.StateTerminal || a.Status != b.Status {
					rt0.Fatalf("ended task %s: before %s %s, after %s %s", id, b.State, b.Status, a.State, a.Status)
				}
			} else if a.State != runtime.StateInterrupted || a.Reason != ReasonNodeRestart || a.Status != runtime.StatusFailed {
				rt0.Fatalf("task %s was %s: after the restart %s %s %q, want interrupted", id, b.State, a.State, a.Status, a.Reason)
			}
		}
		for _, s := range sessions {
			sv, _ := h2.Runtime().Session(s)
			if !slices.Equal(slices.Sorted(slices.Values(sv.AwaitingAck)), slices.Sorted(slices.Values(acks[s]))) {
				rt0.Fatalf("session %s awaits ack of %v after the restart, %v before", s, sv.AwaitingAck, acks[s])
			}
			ct, err := h2.Runtime().CancelledRefusal(s, "Write")
			if err == nil {
				ct = ""
			}
			if ct != refusing[s] {
				rt0.Fatalf("session %s: a cancellation refuses its calls as task %q after the restart, %q before", s, ct, refusing[s])
			}
		}
	})
}

// settleClock is a fake clock whose Advance returns only once every
// AfterFunc it fired has returned, so that the state after it is settled
// (the fake runs them in their own goroutines).
type settleClock struct {
	*clock.Fake
	mu    sync.Mutex
	armed []*settleTimer
}

type settleTimer struct {
	clock.Timer
	due     time.Time
	done    chan struct{}
	stopped bool
}

func newSettleClock(ts time.Time) *settleClock { return &settleClock{Fake: clock.NewFake(ts)} }

func (c *settleClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	st := &settleTimer{due: c.Now().Add(d), done: make(chan struct{})}
	st.Timer = c.Fake.AfterFunc(d, func() { f(); close(st.done) })
	c.mu.Lock()
	c.armed = append(c.armed, st)
	c.mu.Unlock()
	return st
}

func (t *settleTimer) Stop() bool {
	ok := t.Timer.Stop()
	if ok {
		t.stopped = true
		close(t.done)
	}
	return ok
}

// Advance moves the clock and waits (at most 5 s) for what fell due.
func (c *settleClock) Advance(d time.Duration) {
	c.Fake.Advance(d)
	now := c.Now()
	c.mu.Lock()
	var wait []*settleTimer
	keep := c.armed[:0]
	for _, st := range c.armed {
		if st.due.After(now) {
			keep = append(keep, st)
		} else {
			wait = append(wait, st)
		}
	}
	c.armed = keep
	c.mu.Unlock()
	for _, st := range wait {
		select {
		case <-st.done:
		case <-time.After(5 * time.Second):
			panic("settleClock: an AfterFunc did not return within 5 s")
		}
	}
}
