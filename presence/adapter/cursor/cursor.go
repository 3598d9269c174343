// Package cursor maps Cursor's agent hooks (`harn hook cursor`) to
// canonical events. See spec/hooks.md, "Cursor".
//
// Cursor reports no operator prompt: its before* hooks fire before its own
// approval step and say nothing about whether the user is asked. So this
// adapter never emits interaction.input_requested, and a Cursor session
// never shows needs_input from guessing.
package cursor

import (
	"encoding/json"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/internal/hookkit"
)

// Name is the agent name of this adapter.
const Name = "cursor"

// Native event names (Cursor spells them in camelCase).
const (
	SessionStart         = "sessionStart"
	SessionEnd           = "sessionEnd"
	BeforeSubmitPrompt   = "beforeSubmitPrompt"
	PreToolUse           = "preToolUse"
	PostToolUse          = "postToolUse"
	PostToolUseFailure   = "postToolUseFailure"
	BeforeShellExecution = "beforeShellExecution"
	AfterShellExecution  = "afterShellExecution"
	BeforeMCPExecution   = "beforeMCPExecution"
	AfterMCPExecution    = "afterMCPExecution"
	BeforeReadFile       = "beforeReadFile"
	AfterFileEdit        = "afterFileEdit"
	AfterAgentResponse   = "afterAgentResponse"
	AfterAgentThought    = "afterAgentThought"
	Stop                 = "stop"
	SubagentStart        = "subagentStart"
	SubagentStop         = "subagentStop"
)

// Tool names for the hooks that carry no tool_name.
const (
	toolShell = "Shell"
	toolRead  = "Read"
	toolEdit  = "Edit"
	toolMCP   = "MCP"
)

// Events lists the native hook events the adapter maps: the ones `harn
// install` registers.
func Events() []string {
	return []string{
		SessionStart, SessionEnd, BeforeSubmitPrompt, PreToolUse, PostToolUse,
		PostToolUseFailure, BeforeShellExecution, AfterShellExecution, BeforeMCPExecution,
		AfterMCPExecution, BeforeReadFile, AfterFileEdit, AfterAgentResponse,
		AfterAgentThought, Stop, SubagentStart, SubagentStop,
	}
}

type cursor struct{}

// New returns the Cursor adapter.
func New() adapter.Adapter { return cursor{} }

func (cursor) Name() string { return Name }

// Decode maps one Cursor hook invocation. The session is conversation_id
// (session_id where only that is given); a subagent's events belong to its
// subagent_id, with the conversation as parent.
func (cursor) Decode(in adapter.Input) (adapter.Result, error) {
	if in.Now.IsZero() {
		return adapter.Result{}, hookkit.ErrNoClock
	}
	p, native, err := hookkit.Begin(in.Stdin)
	if err != nil {
		return adapter.Result{}, err
	}
	conv, field := p.Str("conversation_id"), "conversation_id"
	if conv == "" {
		conv, field = p.Str("session_id"), "session_id"
	}
	if err := hookkit.CheckSession(field, conv); err != nil {
		return adapter.Result{}, err
	}
	session, parent := conv, ""
	if native == SubagentStart || native == SubagentStop {
		child := p.Str("subagent_id")
		if child == "" || child == conv {
			return adapter.Result{}, hookkit.Malformed("%s has no subagent_id; the subagent's session is unknown", native)
		}
		if err := hookkit.CheckSession("subagent_id", child); err != nil {
			return adapter.Result{}, err
		}
		parent = conv
		if pc := p.Str("parent_conversation_id"); pc != "" && pc != child {
			parent = pc
		}
		session = child
	}

	cwd := p.Str("cwd")
	if cwd == "" {
		if roots := p.Strs("workspace_roots"); len(roots) > 0 {
			cwd = roots[0]
		}
	}
	b := hookkit.NewBuilder(Name, native, in.Now, cwd, in)
	add := func(typ string, attrs map[string]any) { b.Add(typ, session, parent, attrs) }
	tool := func(fallback string) map[string]any {
		t := hookkit.Text(p.Str("tool_name"), presence.MaxAttrStringLen)
		if t == "" {
			t = fallback
		}
		return map[string]any{presence.AttrTool: t}
	}
	wants := false

	switch native {
	case SessionStart:
		add(presence.TypeSessionStart, nil)
		wants = true
	case SessionEnd:
		add(presence.TypeSessionEnd, map[string]any{presence.AttrReason: hookkit.Reason(p.Str("reason"))})
	case BeforeSubmitPrompt:
		add(presence.TypeUserPromptSubmit, nil)
	case PreToolUse:
		add(presence.TypeToolPreUse, tool(""))
	case BeforeMCPExecution:
		add(presence.TypeToolPreUse, tool(toolMCP))
	case BeforeReadFile:
		add(presence.TypeToolPreUse, map[string]any{presence.AttrTool: toolRead})
	case BeforeShellExecution:
		add(presence.TypeToolPreUse, map[string]any{presence.AttrTool: toolShell})
		add(presence.TypeCommandStart, map[string]any{presence.AttrTool: toolShell})
	case PostToolUse, PostToolUseFailure:
		add(presence.TypeToolPostUse, tool(""))
	case AfterShellExecution:
		add(presence.TypeToolPostUse, map[string]any{presence.AttrTool: toolShell})
	case AfterMCPExecution:
		add(presence.TypeToolPostUse, tool(toolMCP))
	case AfterFileEdit:
		add(presence.TypeToolPostUse, map[string]any{presence.AttrTool: toolEdit})
		path := hookkit.CleanPath(b.Cwd, p.Str("file_path"))
		b.AddClaims(session, parent, []string{path}, map[string]any{presence.AttrTool: toolEdit})
	case AfterAgentResponse:
		add(presence.TypeOutputChunk, nil)
		// The session names the agent shows in its answer (only its own
		// counts, which the fold decides).
		for _, n := range presence.ShownNames(p.Str("text") + "\n" + p.Str("agent_message")) {
			add(presence.TypeSessionNameSeen, map[string]any{presence.AttrName: n})
		}
	case AfterAgentThought:
		add(presence.TypeOutputChunk, nil)
	case Stop:
		add(presence.TypeTurnStop, map[string]any{presence.AttrReason: hookkit.Reason(p.Str("status"))})
	case SubagentStart:
		add(presence.TypeSubagentStart, map[string]any{hookkit.AttrAgentType: hookkit.Text(p.Str("subagent_type"), presence.MaxTypeLen)})
	case SubagentStop:
		add(presence.TypeSubagentStop, map[string]any{
			hookkit.AttrAgentType: hookkit.Text(p.Str("subagent_type"), presence.MaxTypeLen),
			presence.AttrReason:   hookkit.Reason(p.Str("status")),
		})
	default:
		return adapter.Result{}, hookkit.UnknownEvent(native)
	}
	return b.Result(session, wants)
}

// Output answers only where an answer carries something or is the plain
// "go on":
//   - sessionStart with peer context: {"additional_context": ...};
//   - beforeSubmitPrompt: {"continue": true}.
//
// The permission hooks (preToolUse, beforeShellExecution, beforeMCPExecution,
// beforeReadFile) get no output. Cursor lets the action through when a hook
// gives no answer (its hooks fail open), while an explicit "allow" could
// skip the approval the user configured: a presence hook must neither deny
// nor approve.
func (cursor) Output(res adapter.Result, reply adapter.Reply) []byte {
	context := reply.Context
	var v any
	switch res.Native {
	case SessionStart:
		if context == "" {
			return nil
		}
		v = struct {
			AdditionalContext string `json:"additional_context"`
		}{context}
	case BeforeSubmitPrompt:
		v = struct {
			Continue bool `json:"continue"`
		}{true}
	default:
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return append(b, '\n')
}

// Catalog is Cursor's own tools (adapter.Cataloger): the tool names of
// preToolUse, with "Bash" for a shell command (beforeShellExecution) and
// `mcp__server__tool` for an MCP call (beforeMCPExecution), as harn's
// decision path names them.
func (cursor) Catalog() []adapter.ToolSpec {
	return []adapter.ToolSpec{
		{Name: "Bash", Mutates: true, Subject: adapter.SubjectCommand},
		{Name: toolShell, Mutates: true, Subject: adapter.SubjectCommand},
		{Name: toolRead, Subject: adapter.SubjectPath},
		{Name: "Write", Mutates: true, Subject: adapter.SubjectPath},
		{Name: toolEdit, Mutates: true, Subject: adapter.SubjectPath},
		{Name: "Delete", Mutates: true, Subject: adapter.SubjectPath},
		{Name: "Grep", Subject: adapter.SubjectPath},
		{Name: "Glob", Subject: adapter.SubjectPath},
		{Name: "LS", Subject: adapter.SubjectPath},
		{Name: toolMCP, Mutates: true},
		adapter.MCPTools,
	}
}

// Describe reads a call for its operator (adapter.Describer): a shell
// command (beforeShellExecution's, as "Bash"), a write tool's file and
// content or edits.
func (c cursor) Describe(tool string, input json.RawMessage) adapter.Asked {
	return hookkit.Describe(c.Catalog(), tool, input)
}
