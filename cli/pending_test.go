package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// TestPendingPrintsWhatEachCallAsksStripped: `agents pending` prints a
// permission request's whole command (every line) and cwd, a harn
// confirmation's file and diff, the session, agent and wait, and the
// commands that answer each; escape sequences are stripped, markup is
// printed as text.
func TestPendingPrintsWhatEachCallAsksStripped(t *testing.T) {
	t0 := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	reqs := []taskwire.Request{
		{ID: "r-1", Kind: taskwire.KindPermission, Session: "s1", Name: "Sable", Node: "box", Agent: "claude-code", Tool: "Bash",
			Facts: taskwire.Facts{Command: "echo '<b>x</b>' \x1b[2J\ngit push --force-with-lease", Cwd: "/w"}, Opened: t0.Add(-2 * time.Minute)},
		{ID: "c-9", Kind: taskwire.KindConfirmation, Task: "t-7", Call: "c-9", Session: "h-1", Node: "box", Agent: "harn", Tool: "edit",
			Facts: taskwire.Facts{Path: "/w/a.go", Diff: "--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-a\n+b", Cwd: "/w"}, Opened: t0.Add(-time.Minute)},
	}
	var b bytes.Buffer
	writePending(&b, reqs, t0)
	out := b.String()
	for _, want := range []string{
		"r-1  Sable on box (claude-code), waiting 2m\n",
		"  command:  echo '<b>x</b>' [2J\n            git push --force-with-lease\n",
		"  cwd:      /w\n",
		"  approve:  harn agents approve r-1\n  deny:     harn agents deny r-1\n",
		"c-9  h-1 on box (harn), waiting 1m\n",
		"  task:     t-7 (the call waits for its confirmation)\n",
		"  file:     /w/a.go (+1/−1 lines)\n",
		"  diff:     --- a/a.go\n            +++ b/a.go\n            @@ -1 +1 @@\n            -a\n            +b\n",
		"  approve:  harn agents approve c-9\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pending lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape sequence reached the terminal: %q", out)
	}
}

// TestPendingJSONHasStableFieldNames: --json names each fact as the docs
// do: command, cwd, path, diff, session, agent, kind, waiting_since and
// waited.
func TestPendingJSONHasStableFieldNames(t *testing.T) {
	t0 := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	r := taskwire.Request{ID: "c-9", Kind: taskwire.KindConfirmation, Task: "t-7", Call: "c-9", Session: "h-1", Agent: "harn", Tool: "shell",
		Facts: taskwire.Facts{Command: "make", Cwd: "/w", Path: "/w/a", Diff: "+x"}, Opened: t0.Add(-90 * time.Second)}
	b, err := json.Marshal(pendingJSONOf(r, t0))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for k, want := range map[string]any{"command": "make", "cwd": "/w", "path": "/w/a", "diff": "+x", "session": "h-1", "agent": "harn",
		"kind": "confirmation", "task": "t-7", "call": "c-9", "waiting_since": "2026-08-12T09:58:30.000Z", "waited": "1m30s", "waiting_ms": 90000.0} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v (%s)", k, m[k], want, b)
		}
	}
}
