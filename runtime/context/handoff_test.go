package context

import (
	stdctx "context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-dev/harn/runtime/agent"
)

// TestANewTaskReceivesOnlyTheConversationOfEarlierTasks (seed 000, "What
// a successor receives"): from a new task's first message on, the working
// set holds of the earlier tasks their prompts, steers, pins and final
// answers, and none of their tool calls, tool results or the text said
// beside them, nor what a compaction summarised of their work; their
// outputs stay in the history, recallable by the references the
// checkpoint keeps; a restart rebuilds the same view.
func TestANewTaskReceivesOnlyTheConversationOfEarlierTasks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	st := openPebble(t, dir)
	sp := NewSpace(st, Options{PreviewBytes: 1024})
	l, _ := sp.Open("s1", "")
	say := call("t1", "c2", "grep", `{"pattern":"CALL-ARGS-2"}`)
	say.Text = "SAID-BESIDE-A-CALL"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Append(user("t1", "PROMPT-1"), call("t1", "c1", "read", `{"path":"CALL-ARGS-1"}`), result("t1", "c1", "OUTPUT-1 "+filler(3000, 1))))
	must(l.Append(user("t1", "STEER-1")))
	// a compaction within t1 summarises its first exchange, naming the call
	if _, err := l.WorkingSet(stdctx.Background(), "t1", 100_000); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := l.CompactAt(stdctx.Background(), false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mustJSON(t, l.ProviderView()), "CALL-ARGS-1") {
		t.Fatal("the compaction's summary does not name the call: the test proves nothing")
	}
	must(l.Append(say, result("t1", "c2", "OUTPUT-2"), agent.Message{Role: agent.RoleAssistant, Text: "FINAL-1", Task: "t1"}))
	must(l.Pin(agent.Message{Role: agent.RoleUser, Text: "PINNED"}))
	must(l.Append(user("t2", "PROMPT-2")))
	view := mustJSON(t, l.ProviderView())
	for _, want := range []string{"PROMPT-1", "STEER-1", "FINAL-1", "PINNED", "PROMPT-2", "out-3", "out-"} {
		if !strings.Contains(view, want) {
			t.Errorf("the new task's view lacks %q: %s", want, view)
		}
	}
	for _, leak := range []string{"OUTPUT-1", "OUTPUT-2", "CALL-ARGS-1", "CALL-ARGS-2", "SAID-BESIDE-A-CALL", `"calls"`, `"role":"tool"`} {
		if strings.Contains(view, leak) {
			t.Errorf("the new task's view carries an earlier task's tool traffic %q: %s", leak, view)
		}
	}
	for _, ref := range []string{"out-3"} {
		if out, _, err := l.Recall(ref, 0, 8); err != nil || string(out) != "OUTPUT-1" {
			t.Fatalf("recall %s after the handoff: %q %v", ref, out, err)
		}
	}
	rep := l.Report()
	if cps := rep.Checkpoints; len(cps) == 0 || cps[len(cps)-1].Method != MethodHandoff {
		t.Fatalf("checkpoints %+v, want the last a handoff", cps)
	}
	// the new task's own traffic is whole until a later task starts
	must(l.Append(call("t2", "c3", "read", `{"path":"CALL-ARGS-3"}`), result("t2", "c3", "OUTPUT-3")))
	ws, err := l.WorkingSet(stdctx.Background(), "t2", 100_000)
	must(err)
	if v := mustJSON(t, ws); !strings.Contains(v, "CALL-ARGS-3") || !strings.Contains(v, "OUTPUT-3") {
		t.Fatalf("the running task's own exchange left its view: %s", v)
	}
	before := mustJSON(t, l.ProviderView())
	must(st.close())
	l2, err := NewSpace(openPebble(t, dir), Options{PreviewBytes: 1024}).Lookup("s1")
	must(err)
	if after := mustJSON(t, l2.ProviderView()); after != before {
		t.Fatalf("the view changed across a restart:\nbefore %s\nafter  %s", before, after)
	}
}

// TestAFirstTaskTakesNoHandoffCheckpoint: a lane with no earlier task's
// tool traffic stores no handoff (nothing to leave the working set).
func TestAFirstTaskTakesNoHandoffCheckpoint(t *testing.T) {
	sp := NewSpace(openPebble(t, ""), Options{})
	l, _ := sp.Open("s1", "")
	_ = l.Append(user("t1", "a"), agent.Message{Role: agent.RoleAssistant, Text: "b", Task: "t1"})
	_ = l.Append(user("t2", "c"))
	if cps := l.Report().Checkpoints; len(cps) != 0 {
		t.Fatalf("checkpoints %+v, want none", cps)
	}
}
