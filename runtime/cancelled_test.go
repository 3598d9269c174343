package runtime

import (
	"errors"
	"strings"
	"testing"
)

// wantCancelled checks that err is a task-check refusal naming the
// cancelled task and who cancelled it.
func wantCancelled(t *testing.T, err error, task, by string) {
	t.Helper()
	wantCheck(t, err, CheckTask)
	var ce *CancelledError
	if !errors.As(err, &ce) || ce.Task != task || ce.By != by {
		t.Fatalf("error %v, want a CancelledError of %s by %s", err, task, by)
	}
	if !strings.Contains(err.Error(), task) || !strings.Contains(err.Error(), by) {
		t.Fatalf("the refusal %q names neither the task nor who cancelled it", err)
	}
}

func TestCancelledTaskRefusesTheSessionsCallsAfterTheBarrierUntilTheTurnEnds(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	run := f.next(t)
	if _, err := f.rt.Cancel(a, "op@n1", "wrong repo"); err != nil {
		t.Fatal(err)
	}
	// During the barrier: the task's own check names who cancelled it.
	_, err := f.rt.Begin(a, f.req("read_file", `{}`))
	wantErr(t, err, ErrTaskCancelling)
	wantCancelled(t, err, a, "op@n1")
	_ = run.Finish(StatusFailed, "")
	f.wantState(t, a, StateTerminal, StatusCancelled)
	if _, ok := f.rt.ActiveTask(testSession); ok {
		t.Fatal("a terminal task is still the active one")
	}
	// After the barrier: the session's calls are still refused.
	for range 2 {
		task, err := f.rt.CancelledRefusal(testSession, "write_file")
		if task != a {
			t.Fatalf("the refusal names task %q, want %s", task, a)
		}
		wantErr(t, err, ErrTaskTerminal)
		wantCancelled(t, err, a, "op@n1")
		if !strings.Contains(err.Error(), "wrong repo") {
			t.Fatalf("the refusal %q does not give the reason", err)
		}
	}
	recs, _ := f.led.Records(a)
	refused := 0
	for _, r := range recs {
		if r.Kind == RecRefused {
			refused++
		}
	}
	if refused != 3 {
		t.Fatalf("%d refusals in the ledger, want 3", refused)
	}
	// The agent's turn ends: the refusal lifts.
	if !f.rt.EndTurn(testSession) {
		t.Fatal("EndTurn lifted no refusal")
	}
	if _, err := f.rt.CancelledRefusal(testSession, "read_file"); err != nil {
		t.Fatalf("after the turn ended: %v", err)
	}
}

func TestCancelledTaskRefusalLiftsWhenANewTaskStarts(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	run := f.next(t)
	_, _ = f.rt.Cancel(a, "op@n1", "")
	_ = run.Finish(StatusFailed, "")
	if _, err := f.rt.CancelledRefusal(testSession, "read_file"); err == nil {
		t.Fatal("no refusal after the cancellation")
	}
	b := f.start(t, "b", nil)
	if _, err := f.rt.CancelledRefusal(testSession, "read_file"); err != nil {
		t.Fatalf("a new task %s runs, yet: %v", b, err)
	}
	f.begin(t, b, "read_file", `{}`)
}

func TestSupersededTaskRefusesUntilItsReplacementStarts(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	f.next(t)
	c := f.begin(t, a, "write_file", `{}`)
	b, _ := f.rt.Supersede(testSession, Request{Text: "b"})
	_, err := f.rt.Begin(a, f.req("read_file", `{}`))
	wantCheck(t, err, CheckTask)
	var ce *CancelledError
	if !errors.As(err, &ce) || ce.Status != StatusSuperseded || !strings.Contains(ce.Reason, b.ID) {
		t.Fatalf("error %v, want a refusal naming the supersede by %s", err, b.ID)
	}
	_ = f.rt.Finish(a, StatusFailed, "")
	_ = c.End(OutcomeSucceeded, nil)
	f.wantState(t, b.ID, StateRunning, "")
	if _, err := f.rt.CancelledRefusal(testSession, "read_file"); err != nil {
		t.Fatalf("the replacement runs, yet: %v", err)
	}
}

func TestSessionWithoutCancellationHasNoRefusal(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	run := f.next(t)
	_ = run.Finish(StatusSucceeded, "done")
	f.wantState(t, a, StateTerminal, StatusSucceeded)
	if task, err := f.rt.CancelledRefusal(testSession, "read_file"); err != nil || task != "" {
		t.Fatalf("a task that succeeded refuses: %s %v", task, err)
	}
	if f.rt.EndTurn(testSession) {
		t.Fatal("EndTurn lifted a refusal that never was")
	}
}
