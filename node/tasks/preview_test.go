package tasks

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/clock"
)

// TestHistoryEventsCarryTheCallsArgsDiffAndOutputBounded: the history a
// TUI paints from carries each call's arguments and a write's diff
// (tool.pre) and the head of its output (tool.post), each within its
// bound, so that the screen shows what a call does before and after.
func TestHistoryEventsCarryTheCallsArgsDiffAndOutputBounded(t *testing.T) {
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "a.txt"), []byte("one\ntwo\nthree\n"), 0o600)
	long := strings.Repeat("x", 3*runtime.MaxEventOutput)
	os.WriteFile(filepath.Join(wd, "long.txt"), []byte(long+"\n"), 0o600)
	srv := modeltest.New(t, modeltest.Calls(true,
		modeltest.Call{ID: "w1", Name: "write", Args: `{"path":"a.txt","content":"one\nTWO\nthree\n"}`},
		modeltest.Call{ID: "w2", Name: "write", Args: `{"path":"b.txt","content":"` + strings.Repeat("p", 2*runtime.MaxEventArgs) + `"}`},
		modeltest.Call{ID: "r1", Name: "read", Args: `{"path":"long.txt"}`},
	), modeltest.Text("done"))
	id, err := h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}, wd)
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.rt.Start(id, runtime.Request{Text: "change a", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, v.ID)
	var evs []agent.Event
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := h.history(Action{Op: OpHistory, Session: id})
		if err != nil {
			t.Fatal(err)
		}
		evs = r.Events
		if n := len(evs); n > 0 && evs[n-1].Type == agent.EvTurnEnd {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn's end is not in the history: %+v", evs)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	got := map[string]agent.Event{}
	for _, e := range evs {
		got[e.Type+" "+e.Call] = e
	}
	pre, post := got["tool.pre w1"], got["tool.post w1"]
	if !strings.Contains(pre.Args, `"path":"a.txt"`) || !strings.Contains(pre.Diff, "-two\n+TWO\n") {
		t.Fatalf("the write's tool.pre: args %q diff %q", pre.Args, pre.Diff)
	}
	if !strings.Contains(post.Output, "wrote") {
		t.Fatalf("the write's tool.post output: %q", post.Output)
	}
	if w2 := got["tool.pre w2"]; len(w2.Args) != runtime.MaxEventArgs || len(w2.Diff) != runtime.MaxEventDiff {
		t.Fatalf("a long write's args are %d bytes and its diff %d, want cut at %d and %d", len(w2.Args), len(w2.Diff), runtime.MaxEventArgs, runtime.MaxEventDiff)
	}
	rpost := got["tool.post r1"]
	if len(rpost.Output) != runtime.MaxEventOutput || !strings.Contains(rpost.Output, "xxxx") {
		t.Fatalf("the read's output preview is %d bytes, want cut at %d", len(rpost.Output), runtime.MaxEventOutput)
	}
}

// TestAHarnConfirmationShowsItsCommandAndDiff: harn's own call that waits
// for `harn task confirm` is listed with its whole command in the
// session's directory (a shell call), or its file and the loop's diff (an
// edit), against the scripted model.
func TestAHarnConfirmationShowsItsCommandAndDiff(t *testing.T) {
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "a.txt"), []byte("one\ntwo\n"), 0o600)
	srv := modeltest.New(t, modeltest.Calls(true,
		modeltest.Call{ID: "s1", Name: "shell", Args: `{"command":"git push --force-with-lease origin main"}`},
		modeltest.Call{ID: "e1", Name: "edit", Args: `{"path":"a.txt","old_string":"two","new_string":"TWO"}`},
	), modeltest.Text("done"))
	id, err := h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}, wd)
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.rt.Start(id, runtime.Request{Text: "push", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "*", Confirm: true}}})
	if err != nil {
		t.Fatal(err)
	}
	var cs []Request
	deadline := time.Now().Add(30 * time.Second)
	for len(cs) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the two calls do not wait for a confirmation: %+v", cs)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, bounded by the deadline
		cs = h.Confirmations()
	}
	by := map[string]Request{}
	for _, c := range cs {
		by[c.ID] = c
	}
	s, e := by["s1"], by["e1"]
	if s.Kind != KindConfirmation || s.Task != v.ID || s.Session != id || s.Agent != Agent || s.Tool != "shell" ||
		s.Command != "git push --force-with-lease origin main" || s.Cwd != wd {
		t.Fatalf("the shell call: %+v", s)
	}
	if e.Path != filepath.Join(wd, "a.txt") || !strings.Contains(e.Diff, "-two\n+TWO") || e.Command != "" {
		t.Fatalf("the edit: %+v", e)
	}
	if _, err := h.Do(Action{Op: OpDeny, Task: v.ID, Call: "s1", By: "op"}); err != nil {
		t.Fatal(err)
	}
	if cs := h.Confirmations(); len(cs) != 1 || cs[0].ID != "e1" {
		t.Fatalf("after the denial: %+v", cs)
	}
}
