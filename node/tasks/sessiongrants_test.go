package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/clock"
)

func grantsHost(t *testing.T, kv KV) *Host {
	t.Helper()
	h, err := New(Config{Node: "n1", KV: kv, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}, Sink: &captureSink{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func taskGrants(t *testing.T, h *Host, task string) []runtime.Grant {
	t.Helper()
	g, err := h.TaskGrants(task)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAHarnSessionWithoutGrantsRunsTheConfirmProfile: harn's own agent
// reads freely and asks before the rest, when its start names no grants.
func TestAHarnSessionWithoutGrantsRunsTheConfirmProfile(t *testing.T) {
	h := grantsHost(t, &memKV{})
	srv := modeltest.New(t, modeltest.Text("hi"))
	r, err := h.Do(Action{Op: OpStart, Agent: AgentHarn, Text: "hello", Workdir: t.TempDir(),
		Harn: &HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := runtime.Profile(runtime.DefaultAgentProfile)
	if g := taskGrants(t, h, r.Task.ID); !slices.Equal(g, want) {
		t.Fatalf("a harn start without grants holds %v, want the %s profile", g, runtime.DefaultAgentProfile)
	}
}

// TestAHarnSessionsGrantsHoldForItsFollowUpsAndSupersedes: the TUI's and
// harn ask --session's follow-ups name no grants and hold the session's;
// one naming wider grants is refused.
func TestAHarnSessionsGrantsHoldForItsFollowUpsAndSupersedes(t *testing.T) {
	h := grantsHost(t, &memKV{})
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("done") })
	edit, _ := runtime.Profile("edit")
	r, err := h.Do(Action{Op: OpStart, Agent: AgentHarn, Text: "create a hello file", Workdir: t.TempDir(), Grants: edit,
		Harn: &HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, r.Task.ID)
	for _, op := range []string{OpFollowUp, OpSupersede} {
		f, err := h.Do(Action{Op: op, Session: r.Session, Text: "create a hello file"})
		if err != nil {
			t.Fatal(err)
		}
		if g := taskGrants(t, h, f.Task.ID); !slices.Equal(g, edit) {
			t.Fatalf("%s holds %v, want the session's edit", op, g)
		}
		waitTaskDone(t, h, f.Task.ID)
	}
	full, _ := runtime.Profile("full")
	_, err = h.Do(Action{Op: OpFollowUp, Session: r.Session, Text: "run it", Grants: full})
	if !errors.Is(err, runtime.ErrCeilingGrows) || KindOf(err) != KindRefused {
		t.Fatalf("a follow-up wider than the session: %v", err)
	}
}

// endHarn ends a harn session as `harn agents end` (or harn ask) does.
func endHarn(t *testing.T, h *Host, id string) {
	t.Helper()
	h.Observe([]presence.Event{{SessionID: id, Type: presence.TypeSessionEnd, TS: time.Now(), Agent: Agent}})
	if err := h.lookup(id).live(h); !errors.Is(err, ErrEnded) {
		t.Fatalf("the session did not end: %v", err)
	}
}

// TestAnEndedHarnSessionReopensWithItsGrantsAndHistory: an action with
// harn options (harn ask --session, the TUI) opens an ended session
// again: the same id, its grants, its context and its history's cursor
// going on; an action without them (harn task follow-up) is refused and
// names the command that reopens it.
func TestAnEndedHarnSessionReopensWithItsGrantsAndHistory(t *testing.T) {
	h := grantsHost(t, &memKV{})
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("done") })
	edit, _ := runtime.Profile("edit")
	r, err := h.Do(Action{Op: OpStart, Agent: AgentHarn, Text: "the word is pelican", Workdir: t.TempDir(), Grants: edit,
		Harn: &HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, r.Task.ID)
	before, err := h.history(Action{Op: OpHistory, Session: r.Session})
	if err != nil {
		t.Fatal(err)
	}
	endHarn(t, h, r.Session)
	_, err = h.Do(Action{Op: OpFollowUp, Session: r.Session, Text: "again"})
	if !errors.Is(err, ErrEnded) || !strings.Contains(err.Error(), "harn ask --session "+r.Session+" TEXT") {
		t.Fatalf("a follow-up without harn options: %v", err)
	}
	f, err := h.Do(Action{Op: OpFollowUp, Session: r.Session, Text: "what was the word?", Harn: &HarnOptions{Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Reopened || f.Session != r.Session {
		t.Fatalf("not reopened: %+v", f)
	}
	if g := taskGrants(t, h, f.Task.ID); !slices.Equal(g, edit) {
		t.Fatalf("the reopened session's task holds %v", g)
	}
	waitTaskDone(t, h, f.Task.ID)
	reqs := srv.Requests()
	last := modeltest.Messages(reqs[len(reqs)-1])
	if !modeltest.Contains(last, "the word is pelican") || strings.Count(strings.Join(last, "\n"), "the word is pelican") != 1 {
		t.Fatalf("the reopened session's request does not carry its context once: %q", last)
	}
	after, err := h.history(Action{Op: OpHistory, Session: r.Session, Since: before.Next})
	if err != nil || len(after.Events) == 0 || after.Events[0].Type != agent.EvTurnStart || after.Events[0].Task != f.Task.ID {
		t.Fatalf("the history did not go on from %d: %+v %v", before.Next, after.Events, err)
	}
	// a live session is not reopened: the follow-up joins it
	g, err := h.Do(Action{Op: OpFollowUp, Session: r.Session, Text: "once more", Harn: &HarnOptions{Key: "k"}})
	if err != nil || g.Reopened {
		t.Fatalf("a follow-up of a live session: %+v %v", g, err)
	}
	waitTaskDone(t, h, g.Task.ID)
}

// TestAHarnSessionReopensAfterARestartWithItsGrants: the session's
// record (options without the key, directory, grants) survives the node;
// the next run opens it again with the grants it was given.
func TestAHarnSessionReopensAfterARestartWithItsGrants(t *testing.T) {
	kv := &memKV{}
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("done") })
	h, err := New(Config{Node: "n1", KV: kv, Key: rebuildKey, Clock: clock.Real{}, Sink: &captureSink{}})
	if err != nil {
		t.Fatal(err)
	}
	edit, _ := runtime.Profile("edit")
	r, err := h.Do(Action{Op: OpStart, Agent: AgentHarn, Text: "hello", Workdir: t.TempDir(), Grants: edit,
		Harn: &HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, r.Task.ID)
	h.Close()
	var stored sessionRecord
	if err := kv.ScanKV(SessionSpace, nil, func(_, v []byte) error { return json.Unmarshal(v, &stored) }); err != nil {
		t.Fatal(err)
	}
	if stored.Options.Key != "" || !slices.Equal(stored.Grants, edit) {
		t.Fatalf("the stored record: %+v", stored)
	}

	h2 := restart(t, kv, time.Now(), nil)
	t.Cleanup(h2.Close)
	f, err := h2.Do(Action{Op: OpFollowUp, Session: r.Session, Text: "again", Harn: &HarnOptions{Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Reopened {
		t.Fatalf("not reopened: %+v", f)
	}
	if g := taskGrants(t, h2, f.Task.ID); !slices.Equal(g, edit) {
		t.Fatalf("after the restart the task holds %v, want edit", g)
	}
	waitTaskDone(t, h2, f.Task.ID)
}

// TestEndedHarnSessionsDoNotCountAgainstTheHostedBound: one-shot asks end
// their sessions; the node's bound on hosted sessions counts the live
// ones, and the ended hostings it keeps are bounded.
func TestEndedHarnSessionsDoNotCountAgainstTheHostedBound(t *testing.T) {
	h := grantsHost(t, &memKV{})
	h.mu.Lock()
	for i := range keepEndedHosted + 10 {
		id := "h-old" + string(rune('A'+i%26)) + strings.Repeat("x", i/26)
		h.sessions[id] = &hosted{id: id, ended: true, ag: &agent.Executor{}}
		h.pruneEndedLocked(id)
	}
	live, total := h.liveLocked(), len(h.sessions)
	h.mu.Unlock()
	if live != 0 || total != keepEndedHosted {
		t.Fatalf("live %d, hosted %d; want 0 and %d", live, total, keepEndedHosted)
	}
}

// TestARefusedActionNeverLeavesAnEndedSessionOpen: a reopening action
// that the runtime refuses (grants wider than the session's) does not
// open the session, and one refused after opening ends it again.
func TestARefusedActionNeverLeavesAnEndedSessionOpen(t *testing.T) {
	h := grantsHost(t, &memKV{})
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("done") })
	ro, _ := runtime.Profile("read-only")
	r, err := h.Do(Action{Op: OpStart, Agent: AgentHarn, Text: "look", Workdir: t.TempDir(), Grants: ro,
		Harn: &HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, r.Task.ID)
	endHarn(t, h, r.Session)
	full, _ := runtime.Profile("full")
	if _, err := h.Do(Action{Op: OpFollowUp, Session: r.Session, Text: "run", Grants: full, Harn: &HarnOptions{Key: "k"}}); !errors.Is(err, runtime.ErrCeilingGrows) {
		t.Fatalf("a wider reopen: %v", err)
	}
	if err := h.lookup(r.Session).live(h); !errors.Is(err, ErrEnded) {
		t.Fatalf("the refused reopen left the session open: %v", err)
	}
	if _, err := h.Do(Action{Op: OpFollowUp, Session: r.Session, Text: "", Harn: &HarnOptions{Key: "k"}}); !errors.Is(err, runtime.ErrEmptyText) {
		t.Fatalf("an empty reopen: %v", err)
	}
	if err := h.lookup(r.Session).live(h); !errors.Is(err, ErrEnded) {
		t.Fatalf("a reopen refused after opening left the session open: %v", err)
	}
}

// TestRefusedCallsAreRebuiltAfterARestart: a task's refused calls are in
// its view after the node restarts (from its call.refused records).
func TestRefusedCallsAreRebuiltAfterARestart(t *testing.T) {
	kv := &memKV{}
	h, err := New(Config{Node: "n1", KV: kv, Key: rebuildKey, Clock: clock.Real{}, Sink: &captureSink{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rt.OpenSession("s1", runtime.SessionConfig{Catalog: catalogOf("claude-code")}); err != nil {
		t.Fatal(err)
	}
	ro, _ := runtime.Profile("read-only")
	v, err := h.rt.Start("s1", runtime.Request{Text: "look", Grants: ro})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.rt.Begin(v.ID, runtime.CallRequest{Capability: "Bash", Input: []byte(`{"command":"ls"}`)}); err == nil {
			t.Fatal("Bash passed under read-only")
		}
	}
	h.Close()
	h2 := restart(t, kv, time.Now(), nil)
	t.Cleanup(h2.Close)
	tv, err := h2.rt.Task(v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tv.Refused != 2 || len(tv.RefusedCalls) != 2 || tv.RefusedCalls[0] != (runtime.RefusedCall{Capability: "Bash", Check: "grant"}) {
		t.Fatalf("after the restart: %+v", tv)
	}
}

// TestConcurrentReopensOpenTheSessionOnce: two callers reopening the same
// ended session at once: one reopens it, the other's task joins it.
func TestConcurrentReopensOpenTheSessionOnce(t *testing.T) {
	h := grantsHost(t, &memKV{})
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("done") })
	r, err := h.Do(Action{Op: OpStart, Agent: AgentHarn, Text: "first", Workdir: t.TempDir(),
		Harn: &HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, r.Task.ID)
	endHarn(t, h, r.Session)
	type out struct {
		res Result
		err error
	}
	ch := make(chan out, 2)
	for range 2 {
		go func() {
			res, err := h.Do(Action{Op: OpFollowUp, Session: r.Session, Text: "again", Harn: &HarnOptions{Key: "k"}})
			ch <- out{res, err}
		}()
	}
	reopened := 0
	for range 2 {
		o := <-ch
		if o.err != nil {
			t.Fatal(o.err)
		}
		if o.res.Reopened {
			reopened++
		}
		waitTaskDone(t, h, o.res.Task.ID)
	}
	if reopened != 1 {
		t.Fatalf("%d of the two reopened the session", reopened)
	}
}

// TestAStoredSessionsWorkdirIsKnownAfterARestart: the remote policy's
// workdir check of a follow-up reaches a session that only its stored
// record knows (the node restarted): a reopen from another node works in
// the session's directory, which the policy sees.
func TestAStoredSessionsWorkdirIsKnownAfterARestart(t *testing.T) {
	kv := &memKV{}
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("done") })
	h, err := New(Config{Node: "n1", KV: kv, Key: rebuildKey, Clock: clock.Real{}, Sink: &captureSink{}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err := h.Do(Action{Op: OpStart, Agent: AgentHarn, Text: "hello", Workdir: dir,
		Harn: &HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, r.Task.ID)
	h.Close()
	h2 := restart(t, kv, time.Now(), nil)
	t.Cleanup(h2.Close)
	if wd, ok := h2.LoopWorkdir(r.Session); !ok || wd != dir {
		t.Fatalf("after the restart the session's workdir is %q %v, want %q", wd, ok, dir)
	}
}
