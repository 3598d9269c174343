package subagent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/harn-dev/harn/runtime"
)

func spawn(t *testing.T, m *Manager, parent, profile string) string {
	t.Helper()
	id, err := m.Spawn(Request{Parent: parent, Profile: profile, Brief: "do the thing"})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestTwentyRequestsRunSixteenAtOnceAndAllHandOff(t *testing.T) {
	r := newFakeRunner()
	m := newTestManager(t, r, newMemStore())
	var ids []string
	for range 20 {
		ids = append(ids, spawn(t, m, "p1", ProfileImplementer))
	}
	if got := len(r.runningIDs()); got != MaxRunning {
		t.Fatalf("%d running, want %d", got, MaxRunning)
	}
	queued := 0
	for _, id := range ids {
		if c, _ := m.Get(id); c.State == StateQueued {
			queued++
		}
	}
	if queued != 4 {
		t.Fatalf("%d queued, want 4", queued)
	}
	// Every child hands off and ends; the queued ones start as slots free.
	for i := 0; i < 40; i++ {
		run := r.runningIDs()
		if len(run) == 0 {
			break
		}
		id := run[0]
		if ans, isErr := m.Handoff(id, []byte(validHandoff)); isErr {
			t.Fatalf("valid handoff refused: %s", ans)
		}
		m.Ended(id, runtime.StatusSucceeded)
	}
	for _, id := range ids {
		res, err := m.Wait(context.Background(), id)
		if err != nil || res.Outcome != OutcomeValid || res.Handoff == nil || res.Handoff.Status != HandoffDone {
			t.Fatalf("child %s: %+v %v", id, res, err)
		}
	}
	if r.maxPer["p1"] > MaxRunning || r.maxNode > MaxRunning || len(r.started) != 20 {
		t.Fatalf("max per parent %d, node %d, started %d", r.maxPer["p1"], r.maxNode, len(r.started))
	}
}

func TestBeyondTheQueueTheModelIsToldToWait(t *testing.T) {
	r := newFakeRunner()
	m := newTestManager(t, r, newMemStore())
	for range MaxRunning + MaxQueued {
		spawn(t, m, "p1", ProfileExplorer)
	}
	_, err := m.Spawn(Request{Parent: "p1", Profile: ProfileExplorer, Brief: "one more"})
	var be *BusyError
	if !errors.As(err, &be) || !errors.Is(err, ErrBusy) || err.Error() != BusyText || be.Running != MaxRunning {
		t.Fatalf("want the busy refusal, got %v", err)
	}
}

func TestTheNodeLimitHoldsAcrossParents(t *testing.T) {
	r := newFakeRunner()
	m := newTestManager(t, r, newMemStore())
	for i := range 12 {
		spawn(t, m, "p1", ProfileExplorer)
		spawn(t, m, "p2", ProfileExplorer)
		_ = i
	}
	if _, node := m.Running("p1"); node != MaxRunning {
		t.Fatalf("node runs %d", node)
	}
	if got := len(r.runningIDs()); got != MaxRunning {
		t.Fatalf("%d started", got)
	}
}

func TestAnInvalidHandoffIsAskedOnceMoreThenMarkedInvalid(t *testing.T) {
	r := newFakeRunner()
	m := newTestManager(t, r, newMemStore())
	id := spawn(t, m, "p", ProfileImplementer)
	ans, isErr := m.Handoff(id, []byte(`{"status":"great"}`))
	if !isErr || !strings.Contains(ans, "once more") {
		t.Fatalf("first invalid: %q %v", ans, isErr)
	}
	ans, isErr = m.Handoff(id, []byte(`{"status":"done"}`))
	if !isErr || ans != HandoffRejected {
		t.Fatalf("second invalid: %q %v", ans, isErr)
	}
	m.Ended(id, runtime.StatusSucceeded)
	res, _ := m.Wait(context.Background(), id)
	if res.Outcome != OutcomeInvalid || res.Handoff != nil || res.Reason == "" {
		t.Fatalf("%+v", res)
	}
	if len(r.asked) != 0 {
		t.Fatalf("a child whose handoff was marked invalid is not asked again: %v", r.asked)
	}
}

func TestAChildEndingWithoutAHandoffIsAskedOnce(t *testing.T) {
	r := newFakeRunner()
	m := newTestManager(t, r, newMemStore())
	id := spawn(t, m, "p", ProfileImplementer)
	m.Ended(id, runtime.StatusSucceeded)
	if len(r.asked) != 1 || r.asked[0] != id {
		t.Fatalf("asked %v", r.asked)
	}
	if c, _ := m.Get(id); c.State != StateRunning || !c.Asked {
		t.Fatalf("%+v", c)
	}
	// It answers the reminder with a valid handoff.
	if _, isErr := m.Handoff(id, []byte(validHandoff)); isErr {
		t.Fatal("refused")
	}
	m.Ended(id, runtime.StatusSucceeded)
	if res, _ := m.Wait(context.Background(), id); res.Outcome != OutcomeValid {
		t.Fatalf("%+v", res)
	}
	// Another ends twice without: invalid.
	id2 := spawn(t, m, "p", ProfileImplementer)
	m.Ended(id2, runtime.StatusSucceeded)
	m.Ended(id2, runtime.StatusSucceeded)
	if res, _ := m.Wait(context.Background(), id2); res.Outcome != OutcomeInvalid {
		t.Fatalf("%+v", res)
	}
}

func TestWaitCancelledCancelsTheChild(t *testing.T) {
	r := newFakeRunner()
	m := newTestManager(t, r, newMemStore())
	id := spawn(t, m, "p", ProfileImplementer)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Wait(ctx, id); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if len(r.cancels) != 1 || r.cancels[0] != id {
		t.Fatalf("cancels %v", r.cancels)
	}
	m.Ended(id, runtime.StatusCancelled)
	if c, _ := m.Get(id); c.Outcome != OutcomeCancelled {
		t.Fatalf("%+v", c)
	}
	// A queued child cancelled ends at once without a runner.
	for range MaxRunning {
		spawn(t, m, "q", ProfileExplorer)
	}
	q := spawn(t, m, "q", ProfileExplorer)
	if err := m.Cancel(q, "operator"); err != nil {
		t.Fatal(err)
	}
	if c, _ := m.Get(q); c.State != StateEnded || c.Outcome != OutcomeCancelled || !c.Started.IsZero() {
		t.Fatalf("%+v", c)
	}
}

func TestRecoverReportsTheLostAndResumesNone(t *testing.T) {
	st := newMemStore()
	r := newFakeRunner()
	m := newTestManager(t, r, st)
	a := spawn(t, m, "p", ProfileImplementer)
	b := spawn(t, m, "p", ProfileExplorer)
	c := spawn(t, m, "p", ProfileReviewer)
	done := spawn(t, m, "p", ProfileExplorer)
	m.Handoff(done, []byte(validHandoff))
	m.Ended(done, runtime.StatusSucceeded)
	// The node dies: a new manager on the same store.
	r2 := newFakeRunner()
	m2 := newTestManager(t, r2, st)
	lost, err := m2.Recover()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range lost {
		got[l.ID] = true
		if l.Outcome != OutcomeLost || l.Reason != ReasonLost || l.State != StateEnded {
			t.Fatalf("%+v", l)
		}
	}
	if len(lost) != 3 || !got[a] || !got[b] || !got[c] {
		t.Fatalf("lost %v", lost)
	}
	if len(r2.started) != 0 {
		t.Fatal("a lost child was resumed")
	}
	if again, _ := m2.Recover(); len(again) != 0 {
		t.Fatalf("reported twice: %v", again)
	}
}

func TestCloseLeavesRecordsForTheNextRun(t *testing.T) {
	st := newMemStore()
	r := newFakeRunner()
	m := newTestManager(t, r, st)
	id := spawn(t, m, "p", ProfileImplementer)
	m.Close()
	if res, _ := m.Wait(context.Background(), id); res.Outcome != OutcomeLost {
		t.Fatalf("%+v", res)
	}
	m.Ended(id, runtime.StatusFailed) // the stopping executor's report changes nothing
	lost, _ := newTestManager(t, newFakeRunner(), st).Recover()
	if len(lost) != 1 || lost[0].ID != id {
		t.Fatalf("%v", lost)
	}
	if _, err := m.Spawn(Request{Parent: "p", Profile: ProfileExplorer, Brief: "x"}); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
}

func TestSpawnRefusals(t *testing.T) {
	m := newTestManager(t, newFakeRunner(), newMemStore())
	for _, req := range []Request{
		{Profile: ProfileExplorer, Brief: "x"},
		{Parent: "p", Profile: ProfileExplorer, Brief: "  "},
		{Parent: "p", Profile: ProfileExplorer, Brief: strings.Repeat("x", MaxBriefBytes+1)},
	} {
		if _, err := m.Spawn(req); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("%+v: %v", req.Parent, err)
		}
	}
	if _, err := m.Spawn(Request{Parent: "p", Profile: "wizard", Brief: "x"}); err == nil || !strings.Contains(err.Error(), "explorer, implementer, reviewer") {
		t.Fatal(err)
	}
}

func TestAFailedStartEndsTheRequestAndFreesTheSlot(t *testing.T) {
	r := newFakeRunner()
	r.failNext = errors.New("no session")
	m := newTestManager(t, r, newMemStore())
	id := spawn(t, m, "p", ProfileImplementer)
	if c, _ := m.Get(id); c.Outcome != OutcomeFailed || c.State != StateEnded {
		t.Fatalf("%+v", c)
	}
	if per, node := m.Running("p"); per != 0 || node != 0 {
		t.Fatalf("slots %d %d", per, node)
	}
}
