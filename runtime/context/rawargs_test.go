package context

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/harn-dev/harn/runtime/agent"
)

// TestToolCallArgumentsAreStoredRawAndComeBackByteForByte: a call's
// arguments are kept exactly as the model sent them (spaces, characters
// encoding/json would escape, even text that is not JSON) and a restart
// gives back the same bytes, never a re-marshalled form.
func TestToolCallArgumentsAreStoredRawAndComeBackByteForByte(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	st := openPebble(t, dir)
	l, _ := NewSpace(st, Options{}).Open("s1", "")
	args := []string{
		`{ "command" : "ls && echo <b> | head",   "timeout_ms": 5000 }`,
		"{\n  \"path\": \"caf\u00e9\\u00e9.txt\"\n}",
		`{"command": "unterminated`,
	}
	m := agent.Message{Role: agent.RoleAssistant, Task: "t1"}
	for i, a := range args {
		m.Calls = append(m.Calls, agent.ToolCall{ID: string(rune('a' + i)), Name: "shell", Args: json.RawMessage(a)})
	}
	if err := l.Append(user("t1", "go"), m); err != nil {
		t.Fatalf("append of raw arguments: %v", err)
	}
	check := func(l *Lane, when string) {
		t.Helper()
		v := l.ProviderView()
		got := v[len(v)-1].Calls
		for i, a := range args {
			if string(got[i].Args) != a {
				t.Fatalf("%s: arguments %d are %q, want %q as sent", when, i, got[i].Args, a)
			}
		}
	}
	check(l, "before the restart")
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	l2, err := NewSpace(openPebble(t, dir), Options{}).Lookup("s1")
	if err != nil {
		t.Fatal(err)
	}
	check(l2, "after the restart")
}
