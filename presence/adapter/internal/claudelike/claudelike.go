// Package claudelike maps the Claude Code hook family: Claude Code's own
// hooks and Codex's, which share their shape (session_id, cwd,
// hook_event_name, tool_name, tool_input, agent_id inside subagents). The
// claudecode and codex adapters differ only in their name and in which tool
// calls are write claims.
package claudelike

import (
	"encoding/json"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/internal/hookkit"
)

// Native event names of the family.
const (
	SessionStart       = "SessionStart"
	UserPromptSubmit   = "UserPromptSubmit"
	PreToolUse         = "PreToolUse"
	PermissionRequest  = "PermissionRequest"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	Notification       = "Notification"
	Elicitation        = "Elicitation"
	Stop               = "Stop"
	StopFailure        = "StopFailure"
	SubagentStart      = "SubagentStart"
	SubagentStop       = "SubagentStop"
	PreCompact         = "PreCompact"
	PostCompact        = "PostCompact"
	SessionEnd         = "SessionEnd"
)

// Mapper maps one agent of the family.
type Mapper struct {
	// Agent is the canonical agent name stamped on events.
	Agent string
	// Claims returns the paths a PreToolUse of tool writes, as the payload
	// names them (relative or absolute), or nil. It may be nil.
	Claims func(tool string, input json.RawMessage) []string
	// StopNames is true when the agent's Stop hook may ask it to show a
	// pending session name (decision block); see Output.
	StopNames bool
	// EnforceAtPermission is true when a task's calls are checked at the
	// agent's PermissionRequest (Codex), not only at PreToolUse.
	EnforceAtPermission bool
}

// MaxTranscriptPath bounds the transcript_path attribute; a longer path is
// left out.
const MaxTranscriptPath = 4096

// Decode maps one hook invocation whose JSON is in.Stdin.
func (m Mapper) Decode(in adapter.Input) (adapter.Result, error) {
	if in.Now.IsZero() {
		return adapter.Result{}, hookkit.ErrNoClock
	}
	p, native, err := hookkit.Begin(in.Stdin)
	if err != nil {
		return adapter.Result{}, err
	}
	sid := p.Str("session_id")
	if err := hookkit.CheckSession("session_id", sid); err != nil {
		return adapter.Result{}, err
	}
	// A payload carrying agent_id comes from inside a subagent: its events
	// belong to the child session.
	session, parent := sid, ""
	if aid := p.Str("agent_id"); aid != "" && aid != sid {
		if err := hookkit.CheckSession("agent_id", aid); err != nil {
			return adapter.Result{}, err
		}
		session, parent = aid, sid
	}
	if (native == SubagentStart || native == SubagentStop) && parent == "" {
		return adapter.Result{}, hookkit.Malformed("%s has no agent_id; the subagent's session is unknown", native)
	}

	cwd := p.Str("cwd")
	b := hookkit.NewBuilder(m.Agent, native, in.Now, cwd, in)
	tool := hookkit.Text(p.Str("tool_name"), presence.MaxAttrStringLen)
	// keys adds the call's keys (tool_use_id, else the input's digest).
	keys := func(attrs map[string]any, request bool) map[string]any {
		hookkit.AddCallKeys(attrs, in.Digest, p.Str("tool_name"), p.Raw("tool_input"), p.Str("tool_use_id"), request)
		return attrs
	}
	add := func(typ string, attrs map[string]any) { b.Add(typ, session, parent, attrs) }
	transcript := hookkit.Text(p.Str("transcript_path"), MaxTranscriptPath)
	wants := false

	switch native {
	case SessionStart:
		add(presence.TypeSessionStart, map[string]any{presence.AttrSource: hookkit.Text(p.Str("source"), presence.MaxTypeLen)})
	case UserPromptSubmit:
		add(presence.TypeUserPromptSubmit, map[string]any{presence.AttrTranscriptPath: transcript})
		wants = true
	case PreToolUse:
		add(presence.TypeToolPreUse, keys(map[string]any{presence.AttrTool: tool}, false))
		if m.Claims != nil {
			var paths []string
			for _, raw := range m.Claims(p.Str("tool_name"), p.Raw("tool_input")) {
				paths = append(paths, hookkit.CleanPath(b.Cwd, raw))
			}
			b.AddClaims(session, parent, paths, map[string]any{presence.AttrTool: tool})
		}
	case PermissionRequest:
		add(presence.TypeInputRequested, keys(map[string]any{
			presence.AttrTool:    tool,
			presence.AttrSummary: hookkit.Summary(b.Cwd, p.Str("tool_name"), p.Raw("tool_input"), m.Claims),
		}, true))
	case PostToolUse:
		add(presence.TypeToolPostUse, map[string]any{presence.AttrTool: tool})
		add(presence.TypeInputResolved, keys(map[string]any{presence.AttrTool: tool}, true))
	case PostToolUseFailure:
		add(presence.TypeToolPostUse, map[string]any{presence.AttrTool: tool})
		if p.Bool("is_interrupt") {
			add(presence.TypeTurnStop, map[string]any{presence.AttrReason: "interrupt"})
		} else {
			add(presence.TypeInputResolved, keys(map[string]any{presence.AttrTool: tool}, true))
		}
	case Notification:
		nt := hookkit.Text(p.Str("notification_type"), presence.MaxTypeLen)
		typ := presence.TypeNarration
		if nt == "permission_prompt" || nt == "elicitation_dialog" {
			typ = presence.TypeInputRequested
		}
		attrs := map[string]any{hookkit.AttrNotificationType: nt}
		if typ == presence.TypeInputRequested {
			attrs[presence.AttrSummary] = presence.WaitingQuestion
		}
		add(typ, attrs)
	case Elicitation:
		add(presence.TypeInputRequested, map[string]any{presence.AttrSummary: presence.WaitingQuestion})
	case Stop:
		add(presence.TypeTurnStop, map[string]any{
			presence.AttrReason:         hookkit.Reason(p.Str("reason")),
			presence.AttrTranscriptPath: transcript,
		})
	case StopFailure:
		add(presence.TypeTurnStop, map[string]any{
			presence.AttrError:          hookkit.Reason(p.Str("error")),
			presence.AttrTranscriptPath: transcript,
		})
	case SubagentStart:
		add(presence.TypeSubagentStart, map[string]any{hookkit.AttrAgentType: hookkit.Text(p.Str("agent_type"), presence.MaxTypeLen)})
	case SubagentStop:
		add(presence.TypeSubagentStop, map[string]any{hookkit.AttrAgentType: hookkit.Text(p.Str("agent_type"), presence.MaxTypeLen)})
	case PreCompact, PostCompact:
		add(presence.TypeNarration, map[string]any{hookkit.AttrTrigger: hookkit.Text(p.Str("trigger"), presence.MaxTypeLen)})
	case SessionEnd:
		add(presence.TypeSessionEnd, map[string]any{presence.AttrReason: hookkit.Reason(p.Str("reason"))})
	default:
		return adapter.Result{}, hookkit.UnknownEvent(native)
	}
	res, err := b.Result(session, wants)
	if err != nil {
		return adapter.Result{}, err
	}
	res.StopHookActive = p.Bool("stop_hook_active")
	return res, nil
}

type hookSpecificOutput struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext"`
}

// Output prints the peer context on UserPromptSubmit and, when m.StopNames,
// asks at Stop for a pending session name to be shown: {"decision":"block",
// "reason":…}, never when stop_hook_active says a Stop hook already blocked
// this stop (so it cannot loop). Everything else prints nothing: the family
// reads an empty stdout with exit 0 as "carry on", and harn never takes a
// permission decision.
func (m Mapper) Output(res adapter.Result, reply adapter.Reply) []byte {
	var v any
	switch {
	case res.Native == UserPromptSubmit && reply.Context != "":
		v = struct {
			HookSpecificOutput hookSpecificOutput `json:"hookSpecificOutput"`
		}{hookSpecificOutput{HookEventName: UserPromptSubmit, AdditionalContext: reply.Context}}
	case res.Native == Stop && m.StopNames && reply.PendingName != "" && !res.StopHookActive:
		v = struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}{"block", NameReason(reply.PendingName)}
	default:
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return append(b, '\n')
}

// NameReason is what a Stop hook tells the agent when it blocks the stop
// to have a re-minted session name shown.
func NameReason(name string) string {
	return "harn: this session has a new name. Before you stop, show this session name: " + name +
		" (one line, exactly as written, so that the operator sees it), then stop."
}

// PlanCall reads a tool call's hook (adapter.Planner): PreToolUse asks
// before the call, PostToolUse and PostToolUseFailure after it, and the
// PermissionRequest is the one a remote approval answers; with
// m.EnforceAtPermission the task runtime also checks the call there.
func (m Mapper) PlanCall(stdin []byte, _ bool) (adapter.Call, bool) {
	c, _, ok := hookkit.ReadCall(stdin)
	if !ok {
		return c, false
	}
	switch c.Event {
	case PreToolUse:
		c.Phase = adapter.PhasePre
	case PostToolUse, PostToolUseFailure:
		c.Phase, c.Failed = adapter.PhasePost, c.Event == PostToolUseFailure
	case PermissionRequest:
		c.Permission = true
		if m.EnforceAtPermission {
			c.Phase = adapter.PhasePre
		}
	}
	return c, true
}

// Writes is the call's claim.write events (adapter.Planner).
func (Mapper) Writes(_ []byte, evs []presence.Event) adapter.Writes {
	return adapter.ClaimedWrites(evs)
}

// Deny refuses a call (adapter.Answerer): a permission decision at the
// PermissionRequest, else PreToolUse's permissionDecision.
func (m Mapper) Deny(c adapter.Call, reason string) []byte {
	if c.Event == PermissionRequest {
		return m.Permission(false, reason)
	}
	return preToolUse("deny", reason)
}

// Allow lets a confirmed call run (adapter.Answerer), in the same forms.
func (m Mapper) Allow(c adapter.Call, reason string) []byte {
	if c.Event == PermissionRequest {
		return m.Permission(true, "")
	}
	return preToolUse("allow", reason)
}

// Warn is a system message (adapter.Answerer).
func (Mapper) Warn(_ adapter.Call, reason string) []byte { return hookkit.SystemMessage(reason) }

// Permission is a PermissionRequest decision (adapter.Approver): the
// behavior, and the message of a denial.
func (Mapper) Permission(allow bool, message string) []byte {
	type decision struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message,omitempty"`
	}
	behavior := "deny"
	if allow {
		behavior = "allow"
	}
	return hookkit.Answer(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": PermissionRequest,
		"decision": decision{Behavior: behavior, Message: message}}})
}

// PermissionForSession allows a PermissionRequest and adds a rule that
// allows tool for the rest of the session (the decision's
// updatedPermissions, what "always allow" at the agent's own prompt does,
// kept to the session).
func (Mapper) PermissionForSession(tool string) []byte {
	type rule struct {
		ToolName string `json:"toolName"`
	}
	type update struct {
		Type        string `json:"type"`
		Rules       []rule `json:"rules"`
		Behavior    string `json:"behavior"`
		Destination string `json:"destination"`
	}
	type decision struct {
		Behavior           string   `json:"behavior"`
		UpdatedPermissions []update `json:"updatedPermissions"`
	}
	return hookkit.Answer(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": PermissionRequest,
		"decision": decision{Behavior: "allow", UpdatedPermissions: []update{{Type: "addRules",
			Rules: []rule{{ToolName: tool}}, Behavior: "allow", Destination: "session"}}}}})
}

func preToolUse(decision, reason string) []byte {
	return hookkit.Answer(map[string]any{"hookSpecificOutput": map[string]string{"hookEventName": PreToolUse,
		"permissionDecision": decision, "permissionDecisionReason": reason}})
}

// Settings is the family's settings layout: groups of one command handler
// under each event, timeouts in seconds (600 s when none is written), and
// the PermissionRequest that --remote-approve waits at.
func Settings(dir, file, envDir string, events []string) *adapter.SettingsSpec {
	return &adapter.SettingsSpec{Dir: dir, File: file, EnvDir: envDir, Events: events, Layout: adapter.LayoutGroups,
		Unit: time.Second, DefaultTimeout: 600 * time.Second, ApproveEvent: PermissionRequest}
}
