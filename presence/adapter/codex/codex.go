// Package codex maps Codex CLI's hooks (`harn hook codex`, hooks.json) and
// its legacy notify program (`harn hook codex-notify`, config.toml) to
// canonical events. See spec/hooks.md, "Codex CLI".
package codex

import (
	"encoding/json"
	"strings"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/internal/claudelike"
	"github.com/harn-dev/harn/presence/adapter/internal/hookkit"
)

// Names of the two adapters; both stamp events with agent "codex".
const (
	Name       = "codex"
	NotifyName = "codex-notify"
)

// Events lists the hooks.json events `harn install` registers: the ones
// Codex documents. Decode also maps the Claude Code events Codex may add
// (PostToolUseFailure, StopFailure, Notification), the same way.
func Events() []string {
	return []string{
		claudelike.SessionStart, claudelike.UserPromptSubmit, claudelike.PreToolUse,
		claudelike.PermissionRequest, claudelike.PostToolUse, claudelike.PreCompact,
		claudelike.PostCompact, claudelike.SubagentStart, claudelike.SubagentStop,
		claudelike.Stop, claudelike.SessionEnd,
	}
}

type hooks struct{ m claudelike.Mapper }

// New returns the Codex hooks adapter. Its mapping is Claude Code's, with
// apply_patch calls as write claims.
func New() adapter.Adapter {
	return hooks{claudelike.Mapper{Agent: Name, Claims: patchClaims, EnforceAtPermission: true}}
}

func (hooks) Name() string                                        { return Name }
func (a hooks) Decode(in adapter.Input) (adapter.Result, error)   { return a.m.Decode(in) }
func (a hooks) Output(res adapter.Result, r adapter.Reply) []byte { return a.m.Output(res, r) }

// PlanCall, Writes: adapter.Planner. Codex is enforced at its permission
// request as well as at PreToolUse.
func (a hooks) PlanCall(stdin []byte, claimed bool) (adapter.Call, bool) {
	return a.m.PlanCall(stdin, claimed)
}
func (a hooks) Writes(stdin []byte, evs []presence.Event) adapter.Writes {
	return a.m.Writes(stdin, evs)
}

// Deny, Allow, Warn: adapter.Answerer; Permission: adapter.Approver.
func (a hooks) Deny(c adapter.Call, reason string) []byte    { return a.m.Deny(c, reason) }
func (a hooks) Allow(c adapter.Call, reason string) []byte   { return a.m.Allow(c, reason) }
func (a hooks) Warn(c adapter.Call, reason string) []byte    { return a.m.Warn(c, reason) }
func (a hooks) Permission(allow bool, message string) []byte { return a.m.Permission(allow, message) }

// Install is where Codex keeps its hooks and instructions
// (adapter.Installer): ~/.codex/hooks.json (or $CODEX_HOME) and AGENTS.md.
// Its groups carry no matcher (Codex reads one as a regular expression;
// absent matches all), and its PermissionRequest hook always may wait: a
// task's calls are checked there.
func (hooks) Install() adapter.InstallSpec {
	s := claudelike.Settings(".codex", "hooks.json", "CODEX_HOME", Events())
	s.Waits = []string{claudelike.PreToolUse, claudelike.PermissionRequest}
	return adapter.InstallSpec{Settings: s, Instructions: &adapter.InstructionsSpec{
		UserDir: ".codex", File: "AGENTS.md", EnvDir: "CODEX_HOME", ProjectFile: "AGENTS.md"}}
}

// TrustFile and CheckTrust (trust.go) make the hooks adapter an
// adapter.HookTruster: Codex runs a hook only once the user trusts it.

// SessionEnv is Codex's session variables (adapter.SessionEnver).
func (hooks) SessionEnv() []string { return []string{"CODEX_SESSION_ID", "CODEX_THREAD_ID"} }

// Drivers: `harn task start --exec 'codex exec --json -'` runs Codex
// (adapter.Driven).
func (hooks) Drivers() []string { return []string{"codex"} }

// ExecExample: adapter.Driven.
func (hooks) ExecExample() string { return "codex exec --json -" }

// patchClaims names the files an apply_patch call adds, updates, deletes or
// moves to. Codex passes the patch text in tool_input.command (a string, or
// an argv array such as ["apply_patch", "<patch>"]); tool_input.input,
// tool_input.patch and a bare string tool_input are read too.
func patchClaims(tool string, input json.RawMessage) []string {
	if !strings.EqualFold(tool, "apply_patch") && tool != "ApplyPatch" {
		return nil
	}
	return PatchPaths(patchText(input))
}

func patchText(input json.RawMessage) string {
	var s string
	if json.Unmarshal(input, &s) == nil {
		return s
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(input, &obj) != nil {
		return ""
	}
	var texts []string
	for _, k := range []string{"command", "input", "patch"} {
		raw, ok := obj[k]
		if !ok {
			continue
		}
		if json.Unmarshal(raw, &s) == nil {
			texts = append(texts, s)
			continue
		}
		var argv []any
		if json.Unmarshal(raw, &argv) == nil {
			for _, a := range argv {
				if s, ok := a.(string); ok {
					texts = append(texts, s)
				}
			}
		}
	}
	return strings.Join(texts, "\n")
}

// Patch header prefixes that name a file the patch writes.
var patchHeaders = []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"}

// PatchPaths returns the paths named by the Add, Update, Delete and Move
// headers of an apply_patch text, in order, as written.
func PatchPaths(text string) []string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		for _, h := range patchHeaders {
			if rest, ok := strings.CutPrefix(line, h); ok {
				if p := strings.TrimSpace(rest); p != "" {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}

type notify struct{}

// NewNotify returns the adapter for Codex's legacy notify program: the JSON
// is the last argument and stdin is ignored.
func NewNotify() adapter.Adapter { return notify{} }

func (notify) Name() string                                { return NotifyName }
func (notify) Output(adapter.Result, adapter.Reply) []byte { return nil }

// PlanCall: a notify payload is no tool call (adapter.Planner).
func (notify) PlanCall([]byte, bool) (adapter.Call, bool) { return adapter.Call{}, false }

// Writes: a notify payload writes nothing.
func (notify) Writes([]byte, []presence.Event) adapter.Writes { return adapter.Writes{} }

// Deny, Allow, Warn: Codex reads no answer from its notify program
// (adapter.Answerer).
func (notify) Deny(adapter.Call, string) []byte  { return nil }
func (notify) Allow(adapter.Call, string) []byte { return nil }
func (notify) Warn(adapter.Call, string) []byte  { return nil }

// Install: harn writes no notify setting; Codex's hooks.json (`harn hook
// install codex`) carries everything notify did (adapter.Installer).
func (notify) Install() adapter.InstallSpec { return adapter.InstallSpec{} }

// Decode maps a notify payload: agent-turn-complete is turn.stop for the
// thread; other types are stored as coordination.command.
func (notify) Decode(in adapter.Input) (adapter.Result, error) {
	if in.Now.IsZero() {
		return adapter.Result{}, hookkit.ErrNoClock
	}
	if len(in.Args) == 0 {
		return adapter.Result{}, hookkit.Malformed("codex notify passes its JSON as the last argument; none was given")
	}
	arg := []byte(in.Args[len(in.Args)-1])
	p, err := hookkit.Parse(arg)
	if err != nil {
		return adapter.Result{}, err
	}
	typ := p.Str("type")
	if typ == "" {
		return adapter.Result{}, hookkit.Malformed("notify payload has no type")
	}
	thread := p.Str("thread-id")
	if err := hookkit.CheckSession("thread-id", thread); err != nil {
		return adapter.Result{}, err
	}
	in.Stdin = arg // the digest covers the payload, wherever it came from
	b := hookkit.NewBuilder(Name, typ, in.Now, p.Str("cwd"), in)
	if typ == "agent-turn-complete" {
		b.Add(presence.TypeTurnStop, thread, "", nil)
	} else {
		b.Add(presence.TypeCoordination, thread, "", nil)
	}
	return b.Result(thread, false)
}

// Catalog is Codex's own tools (adapter.Cataloger); the write tool is
// apply_patch.
func (hooks) Catalog() []adapter.ToolSpec { return Tools() }

// Catalog: the legacy notify hook belongs to the same agent.
func (notify) Catalog() []adapter.ToolSpec { return Tools() }

// Tools is Codex's tool list.
func Tools() []adapter.ToolSpec {
	return []adapter.ToolSpec{
		{Name: "Bash", Mutates: true, Subject: adapter.SubjectCommand},
		{Name: "apply_patch", Mutates: true},
		{Name: "update_plan"},
		{Name: "web_search", Subject: adapter.SubjectText},
		{Name: "view_image", Subject: adapter.SubjectPath},
		adapter.MCPTools,
	}
}

// Host is how a node hosts Codex's interactive TUI in a terminal: `codex
// PROMPT`; Enter during a turn sends the message into it; Esc interrupts.
func (hooks) Host() adapter.HostSpec {
	return adapter.HostSpec{Binary: "codex", Interrupt: adapter.Escape, Submit: adapter.Enter,
		DropEnv: []string{"CODEX_SESSION_ID", "CODEX_THREAD_ID"}}
}

// Describe reads a call for its operator (adapter.Describer): a shell
// call's whole command (an argv joined) and its workdir; apply_patch's
// patch as written, and the first file it names.
func (hooks) Describe(tool string, input json.RawMessage) adapter.Asked { return describe(tool, input) }

// Describe: the legacy notify hook belongs to the same agent.
func (notify) Describe(tool string, input json.RawMessage) adapter.Asked {
	return describe(tool, input)
}

func describe(tool string, input json.RawMessage) adapter.Asked {
	if strings.EqualFold(tool, "apply_patch") || tool == "ApplyPatch" {
		p := strings.TrimPrefix(patchText(input), "apply_patch\n")
		a := adapter.Asked{Patch: p}
		if ps := PatchPaths(p); len(ps) > 0 {
			a.Path = ps[0]
		}
		return a
	}
	return hookkit.Describe(Tools(), tool, input)
}
