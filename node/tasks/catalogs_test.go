package tasks

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

// TestAGeminiTaskIsCheckedAgainstGeminisOwnTools: a harn task on a Gemini
// CLI session checks the calls against Gemini's catalog, so `full` allows
// read_file and run_shell_command, and `read-only` allows read_file and
// refuses run_shell_command (it mutates).
func TestAGeminiTaskIsCheckedAgainstGeminisOwnTools(t *testing.T) {
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{},
		Sessions: fixedSessions{
			"gem-full": {SessionID: "gem-full", Agent: "gemini", Cwd: "/work"},
			"gem-ro":   {SessionID: "gem-ro", Agent: "gemini", Cwd: "/work"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	for _, tc := range []struct {
		session, profile string
		allowed, denied  []string
	}{
		{"gem-full", "full", []string{"read_file", "run_shell_command", "write_file", "replace"}, nil},
		{"gem-ro", "read-only", []string{"read_file", "glob"}, []string{"run_shell_command", "write_file"}},
	} {
		g, err := runtime.Profile(tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		res, err := h.Do(Action{Op: OpStart, Session: tc.session, Text: "look", Grants: g})
		if err != nil {
			t.Fatal(err)
		}
		waitRunning(t, h, res.Task.ID)
		ask := func(i int, tool string) Verdict {
			return h.Decide(context.Background(), Query{Phase: PhasePre, Session: tc.session, Tool: tool,
				Call: fmt.Sprintf("%s-%d", tc.session, i), Input: []byte(`{"file_path":"/work/x","command":"ls"}`)})
		}
		for i, tool := range tc.allowed {
			if v := ask(i, tool); v.Decision != DecideAllow {
				t.Errorf("%s under %s: %+v; want allowed", tool, tc.profile, v)
			}
		}
		for i, tool := range tc.denied {
			if v := ask(100+i, tool); v.Decision != DecideDeny {
				t.Errorf("%s under %s: %+v; want refused", tool, tc.profile, v)
			}
		}
	}
}

// TestEveryAgentAndDriverHasItsOwnCatalog: sessions of each agent, and
// each --exec driver, open with a catalog that is published.
func TestEveryAgentAndDriverHasItsOwnCatalog(t *testing.T) {
	for agent, want := range map[string]string{"claude-code": "claude-code", "claude": "claude-code", "codex": "codex",
		"gemini": "gemini", "cursor": "cursor", "generic": "generic", "harn": "generic"} {
		if got := catalogOf(agent); got != want {
			t.Errorf("catalogOf(%q) = %q; want %q", agent, got, want)
		}
	}
}
