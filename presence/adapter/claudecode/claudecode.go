// Package claudecode maps Claude Code's hooks (`harn hook claude-code`) to
// canonical events. See spec/hooks.md, "Claude Code".
package claudecode

import (
	"encoding/json"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/internal/claudelike"
	"github.com/harn-dev/harn/presence/adapter/internal/hookkit"
)

// Name is the agent name of this adapter.
const Name = "claude-code"

// Events lists the native hook events the adapter maps: the ones `harn
// install` registers.
func Events() []string {
	return []string{
		claudelike.SessionStart, claudelike.UserPromptSubmit, claudelike.PreToolUse,
		claudelike.PermissionRequest, claudelike.PostToolUse, claudelike.PostToolUseFailure,
		claudelike.Notification, claudelike.Elicitation, claudelike.Stop, claudelike.StopFailure,
		claudelike.SubagentStart, claudelike.SubagentStop, claudelike.PreCompact,
		claudelike.PostCompact, claudelike.SessionEnd,
	}
}

type claudeCode struct{ m claudelike.Mapper }

// New returns the Claude Code adapter.
func New() adapter.Adapter {
	return claudeCode{claudelike.Mapper{Agent: Name, Claims: writeClaims, StopNames: true}}
}

func (claudeCode) Name() string                                        { return Name }
func (a claudeCode) Decode(in adapter.Input) (adapter.Result, error)   { return a.m.Decode(in) }
func (a claudeCode) Output(res adapter.Result, r adapter.Reply) []byte { return a.m.Output(res, r) }

// PlanCall, Writes: adapter.Planner (claudelike.Mapper.PlanCall).
func (a claudeCode) PlanCall(stdin []byte, claimed bool) (adapter.Call, bool) {
	return a.m.PlanCall(stdin, claimed)
}
func (a claudeCode) Writes(stdin []byte, evs []presence.Event) adapter.Writes {
	return a.m.Writes(stdin, evs)
}

// Deny, Allow, Warn: adapter.Answerer; Permission: adapter.Approver.
func (a claudeCode) Deny(c adapter.Call, reason string) []byte  { return a.m.Deny(c, reason) }
func (a claudeCode) Allow(c adapter.Call, reason string) []byte { return a.m.Allow(c, reason) }
func (a claudeCode) Warn(c adapter.Call, reason string) []byte  { return a.m.Warn(c, reason) }
func (a claudeCode) Permission(allow bool, message string) []byte {
	return a.m.Permission(allow, message)
}

// PermissionForSession allows the request and the tool for the rest of
// the session (adapter.SessionApprover): Claude Code's PermissionRequest
// decision carries updatedPermissions.
func (a claudeCode) PermissionForSession(tool string) []byte {
	return a.m.PermissionForSession(tool)
}

// Install is where Claude Code keeps its hooks and instructions
// (adapter.Installer): ~/.claude/settings.json (or $CLAUDE_CONFIG_DIR), a
// "*" matcher per event, and CLAUDE.md.
func (claudeCode) Install() adapter.InstallSpec {
	s := claudelike.Settings(".claude", "settings.json", "CLAUDE_CONFIG_DIR", Events())
	s.Matcher = "*"
	s.Waits = []string{claudelike.PreToolUse}
	return adapter.InstallSpec{Settings: s, Instructions: &adapter.InstructionsSpec{
		UserDir: ".claude", File: "CLAUDE.md", EnvDir: "CLAUDE_CONFIG_DIR", ProjectFile: "CLAUDE.md"}}
}

// SessionEnv is Claude Code's session variable (adapter.SessionEnver).
func (claudeCode) SessionEnv() []string { return []string{"CLAUDE_SESSION_ID"} }

// Drivers: `harn task start --exec 'claude -p'` runs Claude Code
// (adapter.Driven).
func (claudeCode) Drivers() []string { return []string{"claude"} }

// ReportsCallEnds: every PreToolUse and PostToolUse carries tool_use_id
// (adapter.CallEnder).
func (claudeCode) ReportsCallEnds() bool { return true }

// ExecExample: adapter.Driven.
func (claudeCode) ExecExample() string { return "claude -p" }

// writeClaims names the file a Write, Edit, MultiEdit or NotebookEdit call
// writes.
func writeClaims(tool string, input json.RawMessage) []string {
	switch tool {
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
	default:
		return nil
	}
	var in struct {
		FilePath     any `json:"file_path"`
		NotebookPath any `json:"notebook_path"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil
	}
	for _, v := range []any{in.FilePath, in.NotebookPath} {
		if s, ok := v.(string); ok && s != "" {
			return []string{s}
		}
	}
	return nil
}

// Catalog is Claude Code's own tools (adapter.Cataloger). The write tools
// are Write, Edit, MultiEdit and NotebookEdit.
func (claudeCode) Catalog() []adapter.ToolSpec { return Tools() }

// Tools is Claude Code's tool list.
func Tools() []adapter.ToolSpec {
	return []adapter.ToolSpec{
		{Name: "Bash", Mutates: true, Subject: adapter.SubjectCommand},
		{Name: "BashOutput"},
		{Name: "KillShell", Mutates: true},
		{Name: "Edit", Mutates: true, Subject: adapter.SubjectPath},
		{Name: "MultiEdit", Mutates: true, Subject: adapter.SubjectPath},
		{Name: "Write", Mutates: true, Subject: adapter.SubjectPath},
		{Name: "NotebookEdit", Mutates: true, Subject: adapter.SubjectPath},
		{Name: "Read", Subject: adapter.SubjectPath},
		{Name: "Glob", Subject: adapter.SubjectPath},
		{Name: "Grep", Subject: adapter.SubjectPath},
		{Name: "LS", Subject: adapter.SubjectPath},
		{Name: "WebFetch", Subject: adapter.SubjectText},
		{Name: "WebSearch", Subject: adapter.SubjectText},
		{Name: "TodoWrite"},
		{Name: "Task", Mutates: true},
		{Name: "ExitPlanMode"},
		adapter.MCPTools,
	}
}

// Host is how a node hosts Claude Code in a terminal: `claude PROMPT`;
// Enter sends a message (during a turn, Claude Code queues it into the
// running turn); one Esc interrupts the current step (two open the rewind
// menu). CLAUDECODE marks a shell inside Claude Code, where it refuses to
// start again.
func (claudeCode) Host() adapter.HostSpec {
	return adapter.HostSpec{Binary: "claude", Interrupt: adapter.Escape, Submit: adapter.Enter,
		DropEnv: []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_SESSION_ID"}}
}

// Describe reads a call for its operator (adapter.Describer): Bash's
// command, the file and edits of Write, Edit, MultiEdit and NotebookEdit.
func (claudeCode) Describe(tool string, input json.RawMessage) adapter.Asked {
	return hookkit.Describe(Tools(), tool, input)
}
