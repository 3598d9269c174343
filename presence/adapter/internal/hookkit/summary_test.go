package hookkit

import (
	"encoding/json"
	"strings"
	"testing"
)

// A waiting-on summary is bounded and never carries tool input beyond one
// file path and a command's program name.
func TestSummaryIsShortAndSafe(t *testing.T) {
	long := strings.Repeat("d/", 80) + "deep.go"
	cases := []struct {
		name, cwd, tool, input, want string
	}{
		{"Bash: the program", "/w", "Bash", `{"command":"git push origin main"}`, "Bash: git"},
		{"Bash: a path to the program", "/w", "Bash", `{"command":"  /usr/local/bin/go test ./..."}`, "Bash: go"},
		{"Bash: a variable first", "/w", "Bash", `{"command":"TOKEN=abc curl x"}`, "Bash"},
		{"Bash: odd characters", "/w", "Bash", `{"command":"$(cat secret) x"}`, "Bash"},
		{"Bash: an argv", "/w", "shell", `{"command":["bash","-lc","rm -rf /"]}`, "shell: bash"},
		{"Bash: nothing", "/w", "Bash", `{}`, "Bash"},
		{"Edit inside cwd", "/w/shop", "Edit", `{"file_path":"/w/shop/src/app.go","old_string":"x"}`, "Edit src/app.go"},
		{"Edit outside cwd", "/w/shop", "Write", `{"file_path":"/etc/hosts","content":"x"}`, "Write /etc/hosts"},
		{"a notebook", "/w", "NotebookEdit", `{"notebook_path":"/w/a.ipynb"}`, "NotebookEdit a.ipynb"},
		{"a long path by its base name", "", "Edit", `{"file_path":"/` + long + `"}`, "Edit deep.go"},
		{"a path with a newline", "/w", "Edit", `{"file_path":"/w/a\nb"}`, "Edit"},
		{"another tool", "/w", "WebFetch", `{"url":"https://example.com/?token=x"}`, "WebFetch"},
		{"a long tool name", "/w", strings.Repeat("t", 100), `{}`, strings.Repeat("t", MaxSummaryTool)},
		{"no tool", "/w", "", `{"command":"ls"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Summary(c.cwd, c.tool, json.RawMessage(c.input), nil); got != c.want {
				t.Fatalf("Summary = %q, want %q", got, c.want)
			}
		})
	}
	// The adapter's claims name the file when it has them.
	claims := func(string, json.RawMessage) []string { return []string{"/w/cart/total.go", "/w/b.go"} }
	if got := Summary("/w", "apply_patch", json.RawMessage(`"patch"`), claims); got != "apply_patch cart/total.go" {
		t.Fatalf("with claims: %q", got)
	}
}

// Begin refuses what is not a named hook payload.
func TestBegin(t *testing.T) {
	for _, bad := range []string{"", "null", "[]", `{"session_id":"s"}`, `{"hook_event_name":1}`} {
		if _, _, err := Begin([]byte(bad)); err == nil {
			t.Errorf("Begin(%q) accepted", bad)
		}
	}
	p, native, err := Begin([]byte(`{"hook_event_name":"Stop","session_id":"s"}`))
	if err != nil || native != "Stop" || p.Str("session_id") != "s" {
		t.Fatalf("%v %q %v", p, native, err)
	}
}
