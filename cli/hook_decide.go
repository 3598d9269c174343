package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/install"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// Bounds of the hook's decision path.
const (
	// decideWait bounds the node's pre-call check: on timeout the call is
	// allowed and a diagnostic recorded, so a hook never stalls its agent.
	decideWait = 300 * time.Millisecond
	// defaultApproveWait is how long a --remote-approve hook waits for a
	// decision from the mesh (hook install writes timeouts that cover it).
	defaultApproveWait = install.DefaultWait
	maxApproveWait     = 10 * time.Minute
)

// addDecideFlags adds the hook's remote approval flags.
func addDecideFlags(c *cobra.Command) {
	c.Flags().Bool("remote-approve", false, "let a PermissionRequest wait for a decision given anywhere in the mesh (harn agents approve|deny); the local prompt is not shown while it waits")
	c.Flags().Duration("approve-wait", defaultApproveWait, "how long --remote-approve waits before the agent shows its own prompt, and how long a harn task's call waits for harn task confirm before it is denied")
}

// hookCall is what the decision path reads of a hook payload.
type hookCall struct {
	Event     string          `json:"hook_event_name"`
	Session   string          `json:"session_id"`
	Conv      string          `json:"conversation_id"`
	Tool      string          `json:"tool_name"`
	Input     json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
	Command   string          `json:"command"` // Cursor's beforeShellExecution
	Server    string          `json:"server"`  // Cursor's beforeMCPExecution
}

// callPlan is the decision path's reading of a tool call's hook payload:
// the payload, and the question the node is to answer, if any.
type callPlan struct {
	p       hookCall
	session string
	ok      bool // the payload decoded
	ask     bool // there is a question for the node
	q       tasks.Query
	cr      []claimwire.Request
	body    []byte // q with the claims beside it, as the node reads it
	// request is the payload's interaction.input_requested, if any: a
	// remote answer is recorded on its session, resolving its key.
	request *presence.Event
}

// requestEvent is the input request among evs, or nil.
func requestEvent(evs []presence.Event) *presence.Event {
	for i := range evs {
		if evs[i].Type == presence.TypeInputRequested {
			return &evs[i]
		}
	}
	return nil
}

// planCall reads the decision path's question out of in (the hook
// payload); cr are the claims the call would take.
func (h *hookRun) planCall(in []byte, cr []claimwire.Request) callPlan {
	var pl callPlan
	if len(in) == 0 || json.Unmarshal(in, &pl.p) != nil {
		return pl
	}
	pl.ok, pl.cr = true, cr
	p := &pl.p
	pl.session = p.Session
	if pl.session == "" {
		pl.session = p.Conv
	}
	if s := os.Getenv("HARN_SESSION"); s != "" && os.Getenv("HARN_TASK") != "" {
		pl.session = s // an agent run by a harn executor: its runtime session
	}
	phase := ""
	switch p.Event {
	case "PreToolUse", "BeforeTool", "preToolUse":
		phase = tasks.PhasePre
	case "beforeShellExecution":
		phase, p.Tool = tasks.PhasePre, "Bash"
		p.Input, _ = json.Marshal(map[string]string{"command": p.Command})
	case "beforeMCPExecution":
		phase, p.Tool = tasks.PhasePre, "mcp__"+p.Server+"__"+p.Tool
	case "PostToolUse", "PostToolUseFailure", "AfterTool", "postToolUse", "postToolUseFailure":
		phase = tasks.PhasePost
	case "PermissionRequest":
		if h.agent == "codex" {
			phase = tasks.PhasePre // Codex is enforced at its permission request
		}
	case "afterFileEdit": // Cursor: the edit is done; claim it, warn at most
		if len(cr) > 0 {
			phase = tasks.PhasePost
		}
	}
	if phase == "" {
		return pl
	}
	pl.ask = true
	pl.q = tasks.Query{Phase: phase, Session: pl.session, Task: os.Getenv("HARN_TASK"), Tool: p.Tool,
		Input: p.Input, Call: p.ToolUseID, Failed: p.Event == "PostToolUseFailure" || p.Event == "postToolUseFailure"}
	// The claims ride beside the task runtime's fields (node/claims_wire.go).
	pl.body, _ = json.Marshal(struct {
		tasks.Query
		Claims []claimwire.Request `json:"claims,omitempty"`
	}{pl.q, cr})
	return pl
}

// decideOutput runs the decision path for a tool call's hook and returns
// what to print: a denial in the agent's own format, a remote approval's
// decision, or out (the adapter's own answer) when there is nothing to
// decide. answer is the node's answer to pl's question given with the
// events (nil when it did not come that way: the node is then asked on
// its own).
func (h *hookRun) decideOutput(c *cobra.Command, pl callPlan, answer *api.DecideResponse, out []byte) []byte {
	if !pl.ok {
		return out
	}
	if pl.ask {
		v, ok := verdictOf(answer), answer != nil
		if !ok {
			v, ok = h.decide(pl)
		}
		if ok && v.Decision == tasks.DecideConfirm {
			v = h.awaitConfirm(c, pl, v)
		}
		if ok && v.Decision == tasks.DecideDeny {
			return denyOutput(h.agent, pl.p.Event, v.Reason)
		}
		if ok && v.Decision == tasks.DecideAllow && v.Reason != "" {
			return allowOutput(h.agent, pl.p.Event, v.Reason) // confirmed by an operator
		}
		if ok && v.Decision == claimwire.DecideWarn {
			return warnOutput(h.agent, v.Reason)
		}
	}
	if pl.p.Event != "PermissionRequest" {
		return out
	}
	if on, _ := c.Flags().GetBool("remote-approve"); !on {
		return out
	}
	wait, _ := c.Flags().GetDuration("approve-wait")
	if wait <= 0 || wait > maxApproveWait {
		wait = defaultApproveWait
	}
	return h.remoteApprove(h.agent, pl, wait, out)
}

func verdictOf(r *api.DecideResponse) tasks.Verdict {
	if r == nil {
		return tasks.Verdict{}
	}
	return tasks.Verdict{Decision: r.Decision, Reason: r.Reason, Task: r.Task, Call: r.Call}
}

// decide asks the node on its own (when the events did not carry the
// question: they were spooled, or the node predates decide_json); ok is
// false when it did not answer in time (the call is then allowed, and a
// diagnostic says so).
func (h *hookRun) decide(pl callPlan) (tasks.Verdict, bool) {
	q := pl.q
	cl, err := h.client()
	if err != nil {
		return tasks.Verdict{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), decideWait)
	defer cancel()
	r, err := cl.api.Decide(ctx, &api.DecideRequest{QueryJson: pl.body})
	if err != nil {
		if q.Phase == tasks.PhasePre && (q.Task != "" || len(pl.cr) > 0 || ctx.Err() != nil) {
			h.diagnose(fmt.Sprintf("pre-call check: the node did not answer within %s (%s); the %s call was allowed",
				decideWait, text.OneLine(err.Error()), text.Clip(q.Tool, 60)), nil)
		}
		return tasks.Verdict{}, false
	}
	return verdictOf(r), true
}

// awaitConfirm waits (up to --approve-wait) for the operator's answer to
// a call that needs a confirmation: the node holds the call pending and
// shows the session as needing input meanwhile. A node that does not
// answer in time gets the call denied: a confirmation is never skipped.
func (h *hookRun) awaitConfirm(c *cobra.Command, pl callPlan, first tasks.Verdict) tasks.Verdict {
	wait, _ := c.Flags().GetDuration("approve-wait")
	if wait <= 0 || wait > maxApproveWait {
		wait = defaultApproveWait
	}
	deny := func(why string) tasks.Verdict {
		return tasks.Verdict{Decision: tasks.DecideDeny, Task: first.Task, Call: first.Call,
			Reason: text.Clip(fmt.Sprintf("harn task %s: call %s needs a confirmation (`harn task confirm %s %s`): %s", first.Task, first.Call, first.Task, first.Call, why), 400)}
	}
	q := pl.q
	q.Wait = wait
	if q.Call == "" {
		q.Call = first.Call
	}
	body, err := json.Marshal(struct {
		tasks.Query
		Claims []claimwire.Request `json:"claims,omitempty"`
	}{q, pl.cr})
	if err != nil {
		return deny(err.Error())
	}
	cl, err := h.client()
	if err != nil {
		return deny("the node is not reachable")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+2*time.Second)
	defer cancel()
	r, err := cl.api.Decide(ctx, &api.DecideRequest{QueryJson: body})
	if err != nil {
		return deny("the node did not answer: " + text.OneLine(err.Error()))
	}
	v := verdictOf(r)
	if v.Decision == tasks.DecideConfirm || v.Decision == tasks.DecideNone {
		return deny("no answer within " + wait.String())
	}
	return v
}

// allowOutput is an explicit allow in the agent's own format (a call an
// operator confirmed runs without the agent's own prompt).
func allowOutput(agent, event, reason string) []byte {
	var v any
	switch {
	case event == "PermissionRequest":
		return permissionOutput("allow", "")
	case agent == "cursor":
		v = map[string]string{"permission": "allow"}
	case agent == "gemini":
		v = map[string]string{"decision": "allow", "reason": reason}
	default: // Claude Code, Codex: PreToolUse
		v = map[string]any{"hookSpecificOutput": map[string]string{"hookEventName": "PreToolUse",
			"permissionDecision": "allow", "permissionDecisionReason": reason}}
	}
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// remoteApprove registers the request with the node and waits for a
// decision from anywhere in the mesh; none in time gives out (the agent
// shows its own prompt).
func (h *hookRun) remoteApprove(agent string, pl callPlan, wait time.Duration, out []byte) []byte {
	req := &api.ApprovalRequest{Session: pl.session, Agent: agent, Tool: pl.p.Tool, Input: pl.p.Input, WaitMs: wait.Milliseconds()}
	if e := pl.request; e != nil {
		req.Session, req.ParentSession = e.SessionID, e.ParentSessionID
		req.RequestKey = e.AttrString(presence.AttrRequestKey)
	}
	cl, err := h.client()
	if err != nil {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+2*time.Second)
	defer cancel()
	r, err := cl.api.AwaitApproval(ctx, req)
	if err != nil {
		h.diagnose("remote approval: "+text.OneLine(err.Error())+"; the agent's own prompt is shown", nil)
		return out
	}
	switch r.Decision {
	case "allow":
		return permissionOutput("allow", "")
	case "deny":
		msg := "denied by " + r.By
		if r.Reason != "" {
			msg += ": " + r.Reason
		}
		return permissionOutput("deny", msg)
	}
	return out
}

// permissionOutput is a PermissionRequest decision (Claude Code and Codex
// share the shape).
func permissionOutput(behavior, message string) []byte {
	type decision struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message,omitempty"`
	}
	v := map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PermissionRequest",
		"decision": decision{Behavior: behavior, Message: message}}}
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// denyOutput is a denial in the agent's own format.
func denyOutput(agent, event, reason string) []byte {
	var v any
	switch {
	case event == "PermissionRequest":
		return permissionOutput("deny", reason)
	case agent == "cursor":
		v = map[string]string{"permission": "deny", "user_message": reason, "agent_message": reason}
	case agent == "gemini":
		v = map[string]string{"decision": "deny", "reason": reason}
	default: // Claude Code, Codex: PreToolUse
		v = map[string]any{"hookSpecificOutput": map[string]string{"hookEventName": "PreToolUse",
			"permissionDecision": "deny", "permissionDecisionReason": reason}}
	}
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// addRemoteApproveFlags adds --remote-approve and --approve-wait to `harn
// hook install`.
func addRemoteApproveFlags(c *cobra.Command, use string) {
	if use != "install" {
		return
	}
	c.Flags().Bool("remote-approve", false, "claude-code, codex: the hook waits for permission decisions given anywhere in the mesh (the local prompt is not shown while it waits)")
	c.Flags().Duration("approve-wait", 0, "with --remote-approve: how long the hook waits (default 30s)")
}

// remoteApproveOptions reads the install flags into o.
func remoteApproveOptions(c *cobra.Command, o *install.Options) error {
	if c.Flags().Lookup("remote-approve") == nil {
		return nil
	}
	o.RemoteApprove, _ = c.Flags().GetBool("remote-approve")
	o.ApproveWait, _ = c.Flags().GetDuration("approve-wait")
	if !o.RemoteApprove {
		if o.ApproveWait != 0 {
			return usageErr(errors.New("--approve-wait needs --remote-approve"))
		}
		return nil
	}
	if o.Agent != "claude-code" && o.Agent != "codex" {
		return usageErr(fmt.Errorf("--remote-approve works for claude-code and codex, not %q", o.Agent))
	}
	if o.ApproveWait < 0 || o.ApproveWait > maxApproveWait {
		return usageErr(fmt.Errorf("--approve-wait %s: give a duration between 1s and %s", o.ApproveWait, maxApproveWait))
	}
	return nil
}
