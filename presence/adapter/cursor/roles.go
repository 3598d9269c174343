package cursor

import (
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/internal/hookkit"
)

// PlanCall reads a tool call's hook (adapter.Planner): preToolUse,
// beforeShellExecution (the call "Bash" with its command) and
// beforeMCPExecution (`mcp__server__tool`) ask before the call;
// postToolUse and postToolUseFailure after it; afterFileEdit, whose edit
// is done, after it when the edit took a claim (it is claimed, warned at
// most).
func (cursor) PlanCall(stdin []byte, claimed bool) (adapter.Call, bool) {
	c, p, ok := hookkit.ReadCall(stdin)
	if !ok {
		return c, false
	}
	switch c.Event {
	case PreToolUse:
		c.Phase = adapter.PhasePre
	case BeforeShellExecution:
		c.Phase, c.Tool = adapter.PhasePre, "Bash"
		c.Input, _ = json.Marshal(map[string]string{"command": p.Command})
	case BeforeMCPExecution:
		c.Phase, c.Tool = adapter.PhasePre, "mcp__"+p.Server+"__"+p.Tool
	case PostToolUse, PostToolUseFailure:
		c.Phase, c.Failed = adapter.PhasePost, c.Event == PostToolUseFailure
	case AfterFileEdit:
		if claimed {
			c.Phase = adapter.PhasePost
		}
	}
	return c, true
}

// Writes is the afterFileEdit's claim.write events (adapter.Planner): the
// edit is done when the hook runs.
func (cursor) Writes(stdin []byte, evs []presence.Event) adapter.Writes {
	w := adapter.ClaimedWrites(evs)
	var p struct {
		Event string `json:"hook_event_name"`
	}
	_ = json.Unmarshal(stdin, &p)
	w.After = p.Event == AfterFileEdit
	return w
}

// Deny refuses a call (adapter.Answerer): {"permission":"deny"} with the
// reason for the user and the agent.
func (cursor) Deny(_ adapter.Call, reason string) []byte {
	return hookkit.Answer(map[string]string{"permission": "deny", "user_message": reason, "agent_message": reason})
}

// Allow is {"permission":"allow"} (adapter.Answerer).
func (cursor) Allow(adapter.Call, string) []byte {
	return hookkit.Answer(map[string]string{"permission": "allow"})
}

// Warn prints nothing: Cursor's file-edit hook takes no answer
// (adapter.Answerer).
func (cursor) Warn(adapter.Call, string) []byte { return nil }

// Install is where Cursor keeps its hooks and rules (adapter.Installer):
// ~/.cursor/hooks.json, flat entries in seconds where only the ones that
// may wait carry a timeout (the others keep Cursor's default). Cursor
// keeps user rules in its settings, not in files: the user scope writes
// ~/.cursor/rules/harn.mdc (read when the home folder is the workspace);
// the project scope is the one every workspace reads.
func (cursor) Install() adapter.InstallSpec {
	rules := filepath.Join(".cursor", "rules")
	return adapter.InstallSpec{
		Settings: &adapter.SettingsSpec{Dir: ".cursor", File: "hooks.json", Events: Events(), Layout: adapter.LayoutFlat,
			Unit: time.Second, Waits: []string{PreToolUse, BeforeShellExecution, BeforeMCPExecution}},
		Instructions: &adapter.InstructionsSpec{UserDir: rules, File: "harn.mdc",
			ProjectFile: filepath.Join(rules, "harn.mdc"), Front: frontMatter},
	}
}

// frontMatter makes the rule apply to every request.
const frontMatter = "---\ndescription: harn coordination with other agents\nalwaysApply: true\n---\n\n"

// SessionEnv is Cursor's session variable (adapter.SessionEnver).
func (cursor) SessionEnv() []string { return []string{"CURSOR_CONVERSATION_ID"} }

// Host is how a node hosts Cursor's CLI in a terminal: `cursor-agent
// PROMPT`, interactive with a first prompt. Cursor documents no interrupt
// key for a running turn; Esc is what its TUI binds to cancel, as the
// other agents'.
func (cursor) Host() adapter.HostSpec {
	return adapter.HostSpec{Binary: "cursor-agent", Interrupt: adapter.Escape, Submit: adapter.Enter,
		DropEnv: []string{"CURSOR_CONVERSATION_ID"}}
}
