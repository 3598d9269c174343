package tasks

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

type recSink struct {
	mu  sync.Mutex
	evs []presence.Event
}

func (s *recSink) Ingest(evs []presence.Event) error {
	s.mu.Lock()
	s.evs = append(s.evs, evs...)
	s.mu.Unlock()
	return nil
}

func (s *recSink) of(typ string) []presence.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []presence.Event
	for _, e := range s.evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func confirmHost(t *testing.T) (*Host, *recSink, string) {
	t.Helper()
	sink := &recSink{}
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}, Sink: sink,
		Sessions: fixedSessions{"cc1": {SessionID: "cc1", Agent: "claude-code", Cwd: "/work"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	g, err := runtime.ParseGrants([]byte("profile read-only\nexecute Bash(git *) confirm\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Do(Action{Op: OpStart, Session: "cc1", Text: "tidy", Grants: g})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, h, res.Task.ID)
	return h, sink, res.Task.ID
}

var gitStatus = Query{Phase: PhasePre, Session: "cc1", Tool: "Bash", Call: "toolu_1", Input: []byte(`{"command":"git status"}`)}

// A call under a confirm grant: the answer without a wait is confirm and
// the session needs input; every hook waiting on the same call id gets the
// operator's answer; the answer is recorded as input_resolved with who.
func TestWaitersOnOneConfirmationAllGetTheOperatorsAnswer(t *testing.T) {
	h, sink, task := confirmHost(t)
	if v := h.Decide(context.Background(), gitStatus); v.Decision != DecideConfirm || v.Call != "toolu_1" {
		t.Fatalf("without a wait: %+v", v)
	}
	req := sink.of(presence.TypeInputRequested)
	if len(req) != 1 || req[0].AttrString(presence.AttrRequestKey) != "toolu_1" || strings.Contains(req[0].AttrString(presence.AttrSummary), "status") {
		t.Fatalf("input_requested: %+v", req)
	}
	q := gitStatus
	q.Wait = 10 * time.Second
	var wg sync.WaitGroup
	out := make([]Verdict, 3)
	for i := range out {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = h.Decide(context.Background(), q) }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := h.Do(Action{Op: OpConfirm, Task: task, Call: "toolu_1", By: "op@n2"}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	for i, v := range out {
		if v.Decision != DecideAllow || !strings.Contains(v.Reason, "op@n2") {
			t.Fatalf("waiter %d: %+v", i, v)
		}
	}
	res := sink.of(presence.TypeInputResolved)
	if len(res) != 1 || res[0].Attrs[attrDecision] != "allow" || res[0].Attrs[attrBy] != "op@n2" {
		t.Fatalf("input_resolved: %+v", res)
	}
	if len(sink.of(presence.TypeInputRequested)) != 1 {
		t.Fatal("a repeat asked again")
	}
}

// Nobody answers: the call is denied at the end of the wait, never
// allowed, and the resolution says harn denied it.
func TestAnUnansweredConfirmationIsDeniedAtTheEndOfTheWait(t *testing.T) {
	h, sink, task := confirmHost(t)
	q := gitStatus
	q.Wait = 50 * time.Millisecond
	v := h.Decide(context.Background(), q)
	if v.Decision != DecideDeny || !strings.Contains(v.Reason, "harn task confirm "+task+" toolu_1") {
		t.Fatalf("unanswered: %+v", v)
	}
	res := sink.of(presence.TypeInputResolved)
	if len(res) != 1 || res[0].Attrs[attrDecision] != "deny" || res[0].Attrs[attrBy] != "harn" {
		t.Fatalf("input_resolved: %+v", res)
	}
	q.Wait = 0
	if v := h.Decide(context.Background(), q); v.Decision != DecideDeny {
		t.Fatalf("a repeat after the denial: %+v", v)
	}
}

// TestAConfirmationShowsWhatItAsks: a call waiting for `harn task
// confirm` is listed with its whole command and where it runs (the
// hook's cwd, else the session's), from the call's own input; once
// answered it is no longer listed.
func TestAConfirmationShowsWhatItAsks(t *testing.T) {
	h, _, task := confirmHost(t)
	q := gitStatus
	q.Input = []byte(`{"command":"git push --force-with-lease origin main"}`)
	if v := h.Decide(context.Background(), q); v.Decision != DecideConfirm {
		t.Fatalf("%+v", v)
	}
	cs := h.Confirmations()
	if len(cs) != 1 {
		t.Fatalf("confirmations: %+v", cs)
	}
	c := cs[0]
	if c.Kind != KindConfirmation || c.ID != "toolu_1" || c.Task != task || c.Call != "toolu_1" || c.Session != "cc1" ||
		c.Agent != "claude-code" || c.Tool != "Bash" || c.Command != "git push --force-with-lease origin main" ||
		c.Cwd != "/work" || c.Opened.IsZero() {
		t.Fatalf("the confirmation: %+v", c)
	}
	q2 := gitStatus
	q2.Call, q2.Cwd = "toolu_2", "/work/sub"
	h.Decide(context.Background(), q2)
	if cs := h.Confirmations(); len(cs) != 2 || cs[1].Cwd != "/work/sub" || cs[1].Command != "git status" {
		t.Fatalf("the second, with the hook's cwd: %+v", cs)
	}
	if _, err := h.Do(Action{Op: OpConfirm, Task: task, Call: "toolu_1", By: "op"}); err != nil {
		t.Fatal(err)
	}
	if cs := h.Confirmations(); len(cs) != 1 || cs[0].ID != "toolu_2" {
		t.Fatalf("after the answer: %+v", cs)
	}
}

// TestConfirmationsListWhileCallsArriveAndAreAnswered: listing the
// confirmations while calls arrive and are answered races nothing, and
// in the end lists exactly the calls still waiting, each with its facts.
func TestConfirmationsListWhileCallsArriveAndAreAnswered(t *testing.T) {
	h, _, task := confirmHost(t)
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			q := gitStatus
			q.Call = fmt.Sprintf("toolu_%02d", i)
			h.Decide(context.Background(), q)
			if i%2 == 0 {
				if _, err := h.Do(Action{Op: OpDeny, Task: task, Call: q.Call, By: "op"}); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			_ = h.Confirmations()
		}()
	}
	wg.Wait()
	cs := h.Confirmations()
	if len(cs) != n/2 {
		t.Fatalf("%d confirmations, want %d: %+v", len(cs), n/2, cs)
	}
	for _, c := range cs {
		if c.Command != "git status" || c.Cwd != "/work" {
			t.Fatalf("a confirmation lost its facts: %+v", c)
		}
	}
}
