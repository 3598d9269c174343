package runtime

import (
	"encoding/json"
	"testing"
)

func TestStartCreatesATaskOnlyWhenNoTaskIsActive(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "first", nil)
	f.wantState(t, a, StateRunning, "")
	_, err := f.rt.Start(testSession, Request{Text: "second"})
	wantErr(t, err, ErrTaskActive)
	_, err = f.rt.Start("nope", Request{Text: "x"})
	wantErr(t, err, ErrNoSession)
	_, err = f.rt.Start(testSession, Request{Text: ""})
	wantErr(t, err, ErrTaskActive)
	if err := f.rt.Finish(a, StatusSucceeded, "done"); err != nil {
		t.Fatal(err)
	}
	b := f.start(t, "after", nil)
	f.wantState(t, b, StateRunning, "")
}

func TestSteerAddsInputToTheActiveTask(t *testing.T) {
	f := newFixture(t)
	_, err := f.rt.Steer(testSession, "early")
	wantErr(t, err, ErrNoActiveTask)
	a := f.start(t, "work", nil)
	run := f.next(t)
	if _, err := f.rt.Steer(testSession, "also do y"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-run.Notify():
	default:
		t.Fatal("a steer did not notify the executor")
	}
	got, _ := run.Steers()
	if len(got) != 1 || got[0] != "also do y" {
		t.Fatalf("steers %q", got)
	}
	if _, err := f.rt.Cancel(a, "op", ""); err != nil {
		t.Fatal(err)
	}
	_, err = f.rt.Steer(testSession, "too late")
	wantErr(t, err, ErrTaskCancelling)
}

func TestSteerWithoutActiveTaskFailsWhileAFollowUpIsBlocked(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	fu, _ := f.rt.FollowUp(testSession, Request{Text: "b", RequiresSuccess: true})
	_ = f.rt.Finish(a, StatusFailed, "")
	f.wantState(t, fu.ID, StateBlocked, "")
	_, err := f.rt.Steer(testSession, "x")
	wantErr(t, err, ErrNoActiveTask)
}

func TestFollowUpWaitsInTheQueueForTheActiveTask(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	fu, err := f.rt.FollowUp(testSession, Request{Text: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if fu.State != StateQueued || fu.QueueDepth != 1 || fu.Position != 1 || fu.Predecessor != a {
		t.Fatalf("follow-up view %+v", fu)
	}
	f.wantState(t, a, StateRunning, "")
	_ = f.rt.Finish(a, StatusSucceeded, "ok")
	f.wantState(t, fu.ID, StateRunning, "")
	sv, _ := f.rt.Session(testSession)
	if sv.QueueDepth != 0 || sv.Task.ID != fu.ID {
		t.Fatalf("session view %+v", sv)
	}
}

func TestFollowUpDoesNotDependOnItsPredecessorByDefault(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	fu, _ := f.rt.FollowUp(testSession, Request{Text: "b"})
	_ = f.rt.Finish(a, StatusFailed, "broke")
	f.wantState(t, fu.ID, StateRunning, "")
}

func TestSupersedeCancelsTheActiveTaskThenStartsItsReplacement(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	run := f.next(t)
	c := f.begin(t, a, "read_file", `{"file_path":"/w/x"}`)
	b, err := f.rt.Supersede(testSession, Request{Text: "b instead"})
	if err != nil {
		t.Fatal(err)
	}
	f.wantState(t, a, StateCancelling, StatusSuperseded)
	f.wantState(t, b.ID, StateQueued, "")
	if run.Context().Err() == nil || c.Context().Err() == nil {
		t.Fatal("the superseded task and its call got no abort signal")
	}
	_ = run.Finish(StatusFailed, "")
	f.wantState(t, a, StateQuiescing, StatusSuperseded)
	f.wantState(t, b.ID, StateQueued, "")
	if err := c.End(OutcomeAborted, nil); err != nil {
		t.Fatal(err)
	}
	f.wantState(t, a, StateTerminal, StatusSuperseded)
	f.wantState(t, b.ID, StateRunning, "")
}

func TestSupersedeInAnIdleSessionStartsAtOnce(t *testing.T) {
	f := newFixture(t)
	b, err := f.rt.Supersede(testSession, Request{Text: "b"})
	if err != nil || b.State != StateRunning {
		t.Fatalf("%+v %v", b, err)
	}
}

func TestSecondSupersedeReplacesTheWaitingReplacement(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	f.next(t)
	b, _ := f.rt.Supersede(testSession, Request{Text: "b"})
	c, _ := f.rt.Supersede(testSession, Request{Text: "c"})
	f.wantState(t, b.ID, StateTerminal, StatusSuperseded)
	_ = f.rt.Finish(a, StatusSucceeded, "")
	f.wantState(t, c.ID, StateRunning, "")
}

// ending makes the predecessor a end in a given way, with b queued behind.
var endings = map[Status]func(f *fixture, t *testing.T, a string){
	StatusFailed: func(f *fixture, t *testing.T, a string) { _ = f.rt.Finish(a, StatusFailed, "") },
	StatusCancelled: func(f *fixture, t *testing.T, a string) {
		if _, err := f.rt.Cancel(a, "op", ""); err != nil {
			t.Fatal(err)
		}
	},
	StatusSuperseded: func(f *fixture, t *testing.T, a string) {
		r, err := f.rt.Supersede(testSession, Request{Text: "replacement"})
		if err != nil {
			t.Fatal(err)
		}
		_ = f.rt.Finish(r.ID, StatusSucceeded, "") // the replacement ran and succeeded
	},
}

func TestRequiresSuccessFollowUpStaysBlockedUntilResumeCancelOrReplace(t *testing.T) {
	for _, ending := range []Status{StatusFailed, StatusCancelled, StatusSuperseded} {
		for _, op := range []string{"resume", "cancel", "replace"} {
			t.Run(string(ending)+"/"+op, func(t *testing.T) {
				f := newFixture(t)
				a := f.start(t, "a", nil)
				fu, _ := f.rt.FollowUp(testSession, Request{Text: "b", RequiresSuccess: true})
				plain, _ := f.rt.FollowUp(testSession, Request{Text: "c"})
				endings[ending](f, t, a)
				f.wantState(t, a, StateTerminal, ending)
				f.wantState(t, fu.ID, StateBlocked, "")
				f.wantState(t, plain.ID, StateQueued, "")
				_, err := f.rt.Start(testSession, Request{Text: "x"})
				wantErr(t, err, ErrTaskActive)
				switch op {
				case "resume":
					if _, err := f.rt.Resume(fu.ID); err != nil {
						t.Fatal(err)
					}
					f.wantState(t, fu.ID, StateRunning, "")
				case "cancel":
					if _, err := f.rt.Cancel(fu.ID, "op", ""); err != nil {
						t.Fatal(err)
					}
					f.wantState(t, fu.ID, StateTerminal, StatusCancelled)
					f.wantState(t, plain.ID, StateRunning, "")
				case "replace":
					n, err := f.rt.Replace(fu.ID, "b, differently")
					if err != nil {
						t.Fatal(err)
					}
					f.wantState(t, fu.ID, StateTerminal, StatusSuperseded)
					f.wantState(t, n.ID, StateRunning, "")
				}
			})
		}
	}
	t.Run("succeeded", func(t *testing.T) {
		f := newFixture(t)
		a := f.start(t, "a", nil)
		fu, _ := f.rt.FollowUp(testSession, Request{Text: "b", RequiresSuccess: true})
		_ = f.rt.Finish(a, StatusSucceeded, "")
		f.wantState(t, fu.ID, StateRunning, "")
		_, err := f.rt.Resume(fu.ID)
		wantErr(t, err, ErrNotBlocked)
	})
}

func TestReplaceOfAQueuedTaskKeepsItsPlaceAndDependents(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	b, _ := f.rt.FollowUp(testSession, Request{Text: "b"})
	c, _ := f.rt.FollowUp(testSession, Request{Text: "c", RequiresSuccess: true})
	n, err := f.rt.Replace(b.ID, "b2")
	if err != nil {
		t.Fatal(err)
	}
	if n.Position != 1 || n.State != StateQueued {
		t.Fatalf("replacement %+v", n)
	}
	_ = f.rt.Finish(a, StatusSucceeded, "")
	f.wantState(t, n.ID, StateRunning, "")
	_ = f.rt.Finish(n.ID, StatusSucceeded, "")
	f.wantState(t, c.ID, StateRunning, "") // it depends on b2 now, which succeeded
	_, err = f.rt.Replace(c.ID, "x")
	wantErr(t, err, ErrNotReplaceable)
}

func TestTaskViewIsJSONForTheRoster(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	_, _ = f.rt.FollowUp(testSession, Request{Text: "b"})
	v := f.state(t, a)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"id", "state", "queue_depth", "session", "action"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("view JSON %s lacks %q", b, k)
		}
	}
	if m["state"] != "running" || m["queue_depth"] != float64(1) {
		t.Fatalf("view JSON %s", b)
	}
	_, _ = f.rt.Cancel(a, "", "")
	b, _ = json.Marshal(f.state(t, a))
	_ = json.Unmarshal(b, &m)
	if m["state"] != "terminal" || m["status"] != "cancelled" {
		t.Fatalf("terminal view JSON %s", b)
	}
}
