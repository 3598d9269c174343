package all_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// TestDescribeReadsWhatEachAgentAsks: each agent's adapter reads its own
// tools' inputs for the operator who approves a call: the whole command
// (an argv joined as a shell reads it, never cut to its program), the
// directory the call names, the file and its edits, Codex's patch.
func TestDescribeReadsWhatEachAgentAsks(t *testing.T) {
	for _, tc := range []struct {
		agent, tool, input string
		want               adapter.Asked
	}{
		{"claude-code", "Bash", `{"command":"git push --force-with-lease origin main","description":"push"}`,
			adapter.Asked{Command: "git push --force-with-lease origin main"}},
		{"claude-code", "Edit", `{"file_path":"/w/a.go","old_string":"a","new_string":"b"}`,
			adapter.Asked{Path: "/w/a.go", Edits: []adapter.Edit{{Old: "a", New: "b"}}}},
		{"claude-code", "Write", `{"file_path":"/w/n.txt","content":"x\ny\n"}`,
			adapter.Asked{Path: "/w/n.txt", Edits: []adapter.Edit{{New: "x\ny\n"}}}},
		{"claude-code", "MultiEdit", `{"file_path":"/w/m.go","edits":[{"old_string":"1","new_string":"2"},{"old_string":"3","new_string":"4"}]}`,
			adapter.Asked{Path: "/w/m.go", Edits: []adapter.Edit{{Old: "1", New: "2"}, {Old: "3", New: "4"}}}},
		{"claude-code", "Read", `{"file_path":"/w/a.go"}`, adapter.Asked{}},
		{"codex", "Bash", `{"command":["bash","-lc","git push --force-with-lease"],"workdir":"/w/sub"}`,
			adapter.Asked{Command: "bash -lc 'git push --force-with-lease'", Dir: "/w/sub"}},
		{"codex", "apply_patch", `{"command":["apply_patch","*** Begin Patch\n*** Update File: src/a.go\n@@\n-a\n+b\n*** End Patch"]}`,
			adapter.Asked{Path: "src/a.go", Patch: "*** Begin Patch\n*** Update File: src/a.go\n@@\n-a\n+b\n*** End Patch"}},
		{"gemini", "run_shell_command", `{"command":"rm -rf build","dir_path":"web"}`,
			adapter.Asked{Command: "rm -rf build", Dir: "web"}},
		{"gemini", "replace", `{"file_path":"/w/a.go","old_string":"x","new_string":"y"}`,
			adapter.Asked{Path: "/w/a.go", Edits: []adapter.Edit{{Old: "x", New: "y"}}}},
		{"gemini", "write_file", `{"file_path":"/w/b.go","content":"package b"}`,
			adapter.Asked{Path: "/w/b.go", Edits: []adapter.Edit{{New: "package b"}}}},
		{"cursor", "Bash", `{"command":"npm publish"}`, adapter.Asked{Command: "npm publish"}},
		{"claude-code", "Bash", `not json`, adapter.Asked{}},
	} {
		a, _ := all.Lookup(tc.agent)
		got := a.(adapter.Describer).Describe(tc.tool, json.RawMessage(tc.input))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s %s:\n got %+v\nwant %+v", tc.agent, tc.tool, tc.input, got, tc.want)
		}
	}
}

// TestPlanCallReadsTheWorkingDirectory: the call carries the payload's
// cwd (Cursor: its first workspace root), where a shell call runs; a cwd
// of another type fails no call.
func TestPlanCallReadsTheWorkingDirectory(t *testing.T) {
	for _, tc := range []struct{ agent, in, want string }{
		{"claude-code", `{"session_id":"s","cwd":"/w","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`, "/w"},
		{"cursor", `{"conversation_id":"c","workspace_roots":["/r1","/r2"],"hook_event_name":"beforeShellExecution","command":"ls"}`, "/r1"},
		{"cursor", `{"conversation_id":"c","cwd":"/r/sub","workspace_roots":["/r1"],"hook_event_name":"beforeShellExecution","command":"ls"}`, "/r/sub"},
		{"gemini", `{"session_id":"s","cwd":7,"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`, ""},
	} {
		a, _ := all.Lookup(tc.agent)
		c, ok := a.(adapter.Planner).PlanCall([]byte(tc.in), false)
		if !ok || c.Cwd != tc.want {
			t.Errorf("%s: cwd %q ok %v, want %q", tc.agent, c.Cwd, ok, tc.want)
		}
	}
}
