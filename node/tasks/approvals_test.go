package tasks

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

type awaited struct {
	ans Answer
	ok  bool
}

// openAwait opens a request on a and waits (bounded) until it is listed.
func openAwait(t *testing.T, a *Approvals, wait time.Duration, returned *atomic.Bool) (string, <-chan awaited) {
	t.Helper()
	out := make(chan awaited, 1)
	go func() {
		_, ans, ok, _ := a.Await(context.Background(), Request{Session: "s1", Tool: "Bash", Key: "call:t1"}, wait)
		returned.Store(true)
		out <- awaited{ans, ok}
	}()
	for i := 0; i < 1000; i++ {
		if l := a.List(); len(l) == 1 {
			return l[0].ID, out
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the request never opened")
	return "", nil
}

// TestTheAnswerIsRecordedBeforeTheHookGetsIt: OnAnswer sees the answered
// request (its key and answer) while the hook still waits, so the agent's
// next event sorts after the recorded answer.
func TestTheAnswerIsRecordedBeforeTheHookGetsIt(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC))
	a := NewApprovals("n", clk)
	var returned atomic.Bool
	var seen Request
	a.OnAnswer(func(r Request) {
		if returned.Load() {
			t.Error("the hook had its answer before it was recorded")
		}
		seen = r
	})
	id, out := openAwait(t, a, time.Minute, &returned)
	if _, err := a.Answer(id, true, "operator@n2", "ok"); err != nil {
		t.Fatal(err)
	}
	got := <-out
	if !got.ok || !got.ans.Allow || seen.Key != "call:t1" || seen.Answer == nil || seen.Answer.By != "operator@n2" {
		t.Fatalf("hook got %+v; recorded %+v", got, seen)
	}
}

// TestAnAnswerThatRacesTheWaitsEndWins: the wait ends while the answer is
// being recorded; the hook still gets the answer (it was recorded, so it
// must be what the agent does).
func TestAnAnswerThatRacesTheWaitsEndWins(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC))
	a := NewApprovals("n", clk)
	release := make(chan struct{})
	a.OnAnswer(func(Request) { <-release })
	var returned atomic.Bool
	id, out := openAwait(t, a, time.Second, &returned)
	answered := make(chan error, 1)
	go func() { _, err := a.Answer(id, false, "operator@n2", "no"); answered <- err }()
	for i := 0; i < 1000 && len(a.List()) != 0; i++ {
		time.Sleep(time.Millisecond) // until Answer took the request
	}
	clk.Advance(2 * time.Second) // the hook's wait ends meanwhile
	// A wrong Await returns empty-handed once its wait ended, whenever
	// that is; the check of what the hook got below catches it without a
	// pause here.
	close(release)
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	if got := <-out; !got.ok || got.ans.Allow || got.ans.By != "operator@n2" {
		t.Fatalf("the hook got %+v; want the recorded deny", got)
	}
}
