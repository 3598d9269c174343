package context

import (
	"encoding/json"
	"testing"

	"github.com/harn-dev/harn/runtime/agent"
)

// TestReferenceLinesAreCachedAsUnitsGroupThem: every exchange's and
// answer's reference line is made when its last item is applied (after a
// restart too), equal to the line made from the unit, with its tokens.
func TestReferenceLinesAreCachedAsUnitsGroupThem(t *testing.T) {
	dir := t.TempDir()
	st := openPebble(t, dir)
	sp := NewSpace(st, Options{PreviewBytes: 256})
	l, err := sp.Open("s1", "")
	if err != nil {
		t.Fatal(err)
	}
	two := agent.Message{Role: agent.RoleAssistant, Task: "t1", Calls: []agent.ToolCall{
		{ID: "a", Name: "read", Args: json.RawMessage(`{"path":"a"}`)}, {ID: "b", Name: "grep", Args: json.RawMessage(`{"q":"x"}`)}}}
	if err := l.Append(user("t1", "go"), call("t1", "c1", "read", `{"path":"f"}`), result("t1", "c1", filler(900, 1)),
		two, result("t1", "a", "short"), agent.Message{Role: agent.RoleTool, CallID: "b", Text: "failed", IsError: true, Task: "t1"},
		agent.Message{Role: agent.RoleAssistant, Text: "done: all\nfine", Task: "t1"}, call("t1", "c9", "read", `{}`)); err != nil {
		t.Fatal(err)
	}
	check := func(l *Lane) {
		t.Helper()
		sp := l.s
		sp.mu.Lock()
		defer sp.mu.Unlock()
		us := units(l.viewLocked())
		if len(us) != 5 {
			t.Fatalf("%d units, want 5", len(us))
		}
		for i, u := range us {
			if u.kind == uUser {
				continue
			}
			last := u.items[len(u.items)-1]
			if last.lineFrom != u.items[0].rec.Seq || last.lineN != len(u.items) {
				t.Fatalf("unit %d: the line cached is of [%d, %d items], the unit [%d, %d items]", i, last.lineFrom, last.lineN, u.items[0].rec.Seq, len(u.items))
			}
			want := makeLine(u)
			if got, n := unitLine(u); got != want || n != agent.Tokens(want) {
				t.Fatalf("unit %d: cached %q (%d tokens), made %q (%d)", i, got, n, want, agent.Tokens(want))
			}
		}
	}
	check(l)
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	st2 := openPebble(t, dir)
	l2, err := NewSpace(st2, Options{PreviewBytes: 256}).Lookup("s1")
	if err != nil {
		t.Fatal(err)
	}
	check(l2)
}
