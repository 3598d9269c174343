// Package gemini maps Gemini CLI's hooks (`harn hook gemini`) to canonical
// events. See spec/hooks.md, "Gemini CLI". Gemini is the one agent whose
// payload carries the event time (timestamp); it is the event's ts.
package gemini

import (
	"encoding/json"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/internal/hookkit"
)

// Name is the agent name of this adapter.
const Name = "gemini"

// Native event names.
const (
	SessionStart = "SessionStart"
	BeforeAgent  = "BeforeAgent"
	BeforeTool   = "BeforeTool"
	AfterTool    = "AfterTool"
	Notification = "Notification"
	AfterAgent   = "AfterAgent"
	SessionEnd   = "SessionEnd"
	PreCompress  = "PreCompress"
	BeforeModel  = "BeforeModel"
	AfterModel   = "AfterModel"
)

// Events lists the native events `harn install` registers. BeforeModel and
// AfterModel are mapped (to narration) but not registered: Gemini runs hooks
// synchronously and fires AfterModel for every streamed chunk, so a hook
// process there would slow every answer to record events that change
// nothing.
func Events() []string {
	return []string{SessionStart, BeforeAgent, BeforeTool, AfterTool, Notification, AfterAgent, SessionEnd, PreCompress}
}

type gemini struct{}

// New returns the Gemini CLI adapter.
func New() adapter.Adapter { return gemini{} }

func (gemini) Name() string { return Name }

// Decode maps one Gemini hook invocation.
func (gemini) Decode(in adapter.Input) (adapter.Result, error) {
	p, native, err := hookkit.Begin(in.Stdin)
	if err != nil {
		return adapter.Result{}, err
	}
	session := p.Str("session_id")
	if err := hookkit.CheckSession("session_id", session); err != nil {
		return adapter.Result{}, err
	}
	ts := hookkit.Timestamp(p.Str("timestamp"), in.Now)
	if ts.IsZero() {
		return adapter.Result{}, hookkit.ErrNoClock
	}
	b := hookkit.NewBuilder(Name, native, ts, p.Str("cwd"), in)
	add := func(typ string, attrs map[string]any) { b.Add(typ, session, "", attrs) }
	tool := hookkit.Text(p.Str("tool_name"), presence.MaxAttrStringLen)
	wants := false

	switch native {
	case SessionStart:
		add(presence.TypeSessionStart, map[string]any{presence.AttrSource: hookkit.Text(p.Str("source"), presence.MaxTypeLen)})
		wants = true
	case BeforeAgent:
		add(presence.TypeUserPromptSubmit, nil)
		wants = true
	case BeforeTool:
		attrs := map[string]any{presence.AttrTool: tool}
		hookkit.AddCallKeys(attrs, in.Digest, p.Str("tool_name"), p.Raw("tool_input"), p.Str("tool_use_id"), false)
		add(presence.TypeToolPreUse, attrs)
	case AfterTool:
		add(presence.TypeToolPostUse, map[string]any{presence.AttrTool: tool})
		attrs := map[string]any{presence.AttrTool: tool}
		hookkit.AddCallKeys(attrs, in.Digest, p.Str("tool_name"), p.Raw("tool_input"), p.Str("tool_use_id"), true)
		add(presence.TypeInputResolved, attrs)
	case Notification:
		nt := hookkit.Text(p.Str("notification_type"), presence.MaxTypeLen)
		attrs := map[string]any{hookkit.AttrNotificationType: nt}
		if nt != "ToolPermission" {
			add(presence.TypeNarration, attrs)
			break
		}
		// Gemini's details describe the confirmation (an edit's file, a
		// command); only when they name the tool and its arguments as
		// AfterTool does can the request be keyed. Unkeyed, any later
		// AfterTool resolves it.
		d := p.Obj("details")
		if d.Str("tool_name") != "" && d.Raw("tool_input") != nil {
			attrs[presence.AttrTool] = hookkit.Text(d.Str("tool_name"), presence.MaxAttrStringLen)
			hookkit.AddCallKeys(attrs, in.Digest, d.Str("tool_name"), d.Raw("tool_input"), d.Str("tool_use_id"), true)
			attrs[presence.AttrSummary] = hookkit.Summary(b.Cwd, d.Str("tool_name"), d.Raw("tool_input"), nil)
		} else {
			attrs[presence.AttrSummary] = confirmationSummary(b.Cwd, d)
		}
		add(presence.TypeInputRequested, attrs)
	case AfterAgent:
		add(presence.TypeTurnStop, nil)
	case SessionEnd:
		add(presence.TypeSessionEnd, map[string]any{presence.AttrReason: hookkit.Reason(p.Str("reason"))})
	case PreCompress:
		add(presence.TypeNarration, map[string]any{hookkit.AttrTrigger: hookkit.Text(p.Str("trigger"), presence.MaxTypeLen)})
	case BeforeModel, AfterModel:
		add(presence.TypeNarration, nil)
	default:
		return adapter.Result{}, hookkit.UnknownEvent(native)
	}
	return b.Result(session, wants)
}

// confirmationSummary says what a keyless ToolPermission waits on, from
// Gemini's confirmation details: "Shell: <root command>" for a command,
// "Edit <path>" for an edit, the MCP tool's name, else a question.
func confirmationSummary(cwd string, d hookkit.Payload) string {
	switch d.Str("type") {
	case "exec":
		if w := hookkit.CommandWord(d.Str("rootCommand")); w != "" {
			return "Shell: " + w
		}
		return "Shell"
	case "edit":
		if p := hookkit.ShortPath(cwd, d.Str("filePath")); p != "" {
			return "Edit " + p
		}
		return "Edit"
	case "mcp":
		if t := hookkit.Summary(cwd, d.Str("toolName"), nil, nil); t != "" {
			return t
		}
		return "MCP"
	}
	return presence.WaitingQuestion
}

type contextOutput struct {
	HookSpecificOutput struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// Output is the empty object, or, on SessionStart and BeforeAgent with peer
// context, {"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}:
// Gemini appends that text to the prompt of the turn (BeforeAgent) or puts
// it first in the history (SessionStart). Gemini parses a successful hook's
// stdout as JSON, and some versions read stderr as the hook's message when
// stdout is empty; neither answer carries a decision, so it never blocks.
func (gemini) Output(res adapter.Result, reply adapter.Reply) []byte {
	if reply.Context == "" || (res.Native != SessionStart && res.Native != BeforeAgent) {
		return []byte("{}\n")
	}
	var out contextOutput
	out.HookSpecificOutput.HookEventName, out.HookSpecificOutput.AdditionalContext = res.Native, reply.Context
	b, err := json.Marshal(out)
	if err != nil {
		return []byte("{}\n")
	}
	return append(b, '\n')
}

// Catalog is Gemini CLI's own tools (adapter.Cataloger). The write tools
// are write_file and replace; the shell tool is run_shell_command.
func (gemini) Catalog() []adapter.ToolSpec {
	return []adapter.ToolSpec{
		{Name: "read_file", Subject: adapter.SubjectPath},
		{Name: "read_many_files"},
		{Name: "write_file", Mutates: true, Subject: adapter.SubjectPath},
		{Name: "replace", Mutates: true, Subject: adapter.SubjectPath},
		{Name: "run_shell_command", Mutates: true, Subject: adapter.SubjectCommand},
		{Name: "glob", Subject: adapter.SubjectText},
		{Name: "search_file_content", Subject: adapter.SubjectText},
		{Name: "list_directory", Subject: adapter.SubjectPath},
		{Name: "web_fetch"},
		{Name: "google_web_search", Subject: adapter.SubjectText},
		{Name: "save_memory", Mutates: true},
		{Name: "write_todos"},
		adapter.MCPTools,
	}
}

// Describe reads a call for its operator (adapter.Describer):
// run_shell_command's command and dir_path, write_file's file and
// content, replace's file and its old and new strings.
func (g gemini) Describe(tool string, input json.RawMessage) adapter.Asked {
	return hookkit.Describe(g.Catalog(), tool, input)
}
