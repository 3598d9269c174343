// Package gemini maps Gemini CLI's hooks (`harn hook gemini`) to canonical
// events. See spec/hooks.md, "Gemini CLI". Gemini is the one agent whose
// payload carries the event time (timestamp); it is the event's ts.
package gemini

import (
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
	p, err := hookkit.Parse(in.Stdin)
	if err != nil {
		return adapter.Result{}, err
	}
	native := p.Str("hook_event_name")
	if native == "" {
		return adapter.Result{}, hookkit.Malformed("hook_event_name is missing; the payload names no event")
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

	switch native {
	case SessionStart:
		add(presence.TypeSessionStart, map[string]any{presence.AttrSource: hookkit.Text(p.Str("source"), presence.MaxTypeLen)})
	case BeforeAgent:
		add(presence.TypeUserPromptSubmit, nil)
	case BeforeTool:
		add(presence.TypeToolPreUse, map[string]any{presence.AttrTool: tool})
	case AfterTool:
		add(presence.TypeToolPostUse, map[string]any{presence.AttrTool: tool})
		add(presence.TypeInputResolved, map[string]any{
			presence.AttrTool:       tool,
			presence.AttrRequestKey: hookkit.RequestKey(in.Digest, p.Str("tool_name"), p.Raw("tool_input")),
		})
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
		if d := p.Obj("details"); d.Str("tool_name") != "" && d.Raw("tool_input") != nil {
			attrs[presence.AttrTool] = hookkit.Text(d.Str("tool_name"), presence.MaxAttrStringLen)
			attrs[presence.AttrRequestKey] = hookkit.RequestKey(in.Digest, d.Str("tool_name"), d.Raw("tool_input"))
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
		add(presence.TypeCoordination, nil)
	}
	return b.Result(session, false)
}

// Output is always the empty object: Gemini parses a successful hook's
// stdout as JSON, and some versions read stderr as the hook's message when
// stdout is empty. {} carries no decision, so it never blocks.
func (gemini) Output(adapter.Result, string) []byte {
	return []byte("{}\n")
}
