package node

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
)

// awaitOpen opens r on n and waits (bounded) until it is listed; the
// returned channel gets the hook's answer.
func awaitOpen(t *testing.T, n *Node, r tasks.Request) (string, <-chan bool) {
	t.Helper()
	got := make(chan bool, 1)
	go func() {
		_, ans, ok, _ := n.Tasks().Approvals().Await(t.Context(), r, time.Minute)
		got <- ok && ans.Allow
	}()
	for i := 0; i < 500; i++ {
		for _, o := range n.Tasks().Approvals().List() {
			if o.Session == r.Session && o.Key == r.Key {
				return o.ID, got
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the request never opened")
	return "", nil
}

// TestAnAnswerIsRecordedAsTheSessionsInputResolved: the operator's answer
// is folded before Answer returns (the session leaves needs_input for
// working) and the session's trace holds it with the decision, the
// operator and the reason.
func TestAnAnswerIsRecordedAsTheSessionsInputResolved(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n,
		ev("p1", "1", presence.TypeSessionStart, 1, nil),
		ev("p1", "2", presence.TypeToolPreUse, 2, map[string]any{presence.AttrTool: "Bash", presence.AttrCallKey: "call:t1", presence.AttrInputKey: "d1"}),
		ev("p1", "3", presence.TypeInputRequested, 3, map[string]any{presence.AttrTool: "Bash", presence.AttrRequestKey: "d1", presence.AttrInputKey: "d1"}))
	if st, _ := n.Resolve("p1"); st.Activity != presence.ActivityNeedsInput {
		t.Fatalf("before the answer: %s", st.Activity)
	}
	id, got := awaitOpen(t, n, tasks.Request{Session: "p1", Agent: "claude-code", Tool: "Bash", Key: "d1"})
	if _, err := n.Tasks().Approvals().Answer(id, true, "operator@n2", "the build is safe"); err != nil {
		t.Fatal(err)
	}
	st, err := n.Resolve("p1")
	if err != nil || st.Activity != presence.ActivityWorking || st.ActivitySource != presence.TypeInputResolved {
		t.Fatalf("after the answer: %s from %s (%v)", st.Activity, st.ActivitySource, err)
	}
	if !<-got {
		t.Fatal("the hook did not get the allow")
	}
	_, evs, _, err := n.roster.ReadTrace(t.Context(), "p1")
	if err != nil {
		t.Fatal(err)
	}
	var attrs map[string]any
	for _, e := range evs {
		if e.Type == presence.TypeInputResolved {
			if err := json.Unmarshal(e.AttrsJson, &attrs); err != nil {
				t.Fatal(err)
			}
		}
	}
	if attrs["decision"] != "allow" || attrs["by"] != "operator@n2" || attrs["reason"] != "the build is safe" ||
		attrs["request_key"] != "d1" || !strings.HasPrefix(attrs["request"].(string), "r-") {
		t.Fatalf("the trace's input_resolved: %v", attrs)
	}
}

// TestAStaleAnswerDoesNotClearANewerRequest: an answer to an older
// request (another key) is recorded, but the session still needs input
// for the newer request; a deny also counts as an answer.
func TestAStaleAnswerDoesNotClearANewerRequest(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n,
		ev("p2", "1", presence.TypeSessionStart, 1, nil),
		ev("p2", "2", presence.TypeInputRequested, 2, map[string]any{presence.AttrTool: "Bash", presence.AttrRequestKey: "call:new"}))
	id, got := awaitOpen(t, n, tasks.Request{Session: "p2", Agent: "claude-code", Tool: "Bash", Key: "call:old"})
	if _, err := n.Tasks().Approvals().Answer(id, false, "operator@n2", "no"); err != nil {
		t.Fatal(err)
	}
	<-got
	if st, _ := n.Resolve("p2"); st.Activity != presence.ActivityNeedsInput {
		t.Fatalf("a stale answer cleared the newer request: %s", st.Activity)
	}
	id, got = awaitOpen(t, n, tasks.Request{Session: "p2", Agent: "claude-code", Tool: "Bash", Key: "call:new"})
	if _, err := n.Tasks().Approvals().Answer(id, false, "operator@n2", "no"); err != nil {
		t.Fatal(err)
	}
	<-got
	if st, _ := n.Resolve("p2"); st.Activity != presence.ActivityWorking {
		t.Fatalf("the deny of the open request left %s", st.Activity)
	}
}

// TestAnAnswerNeverMakesUpASession: an answer for a session this node does
// not hold records nothing (no session appears).
func TestAnAnswerNeverMakesUpASession(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	id, got := awaitOpen(t, n, tasks.Request{Session: "ghost", Agent: "claude-code", Tool: "Bash", Key: "d1"})
	if _, err := n.Tasks().Approvals().Answer(id, true, "operator@n2", ""); err != nil {
		t.Fatal(err)
	}
	<-got
	if _, err := n.Resolve("ghost"); err == nil {
		t.Fatal("the answer made up the session it named")
	}
}
