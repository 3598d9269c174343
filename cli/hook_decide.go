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
	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/util/text"
)

// Bounds of the hook's decision path.
const (
	// decideWait bounds the node's pre-call check: on timeout the call is
	// allowed and a diagnostic recorded, so a hook never stalls its agent.
	decideWait = 300 * time.Millisecond
	// defaultApproveWait is how long a --remote-approve hook waits for a
	// decision from the mesh.
	defaultApproveWait = 30 * time.Second
	maxApproveWait     = 10 * time.Minute
)

// addDecideFlags adds the hook's remote approval flags.
func addDecideFlags(c *cobra.Command) {
	c.Flags().Bool("remote-approve", false, "let a PermissionRequest wait for a decision given anywhere in the mesh (harn agents approve|deny); the local prompt is not shown while it waits")
	c.Flags().Duration("approve-wait", defaultApproveWait, "how long --remote-approve waits before the agent shows its own prompt")
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

// decideOutput runs the decision path for a tool call's hook and returns
// what to print: a denial in the agent's own format, a remote approval's
// decision, or out (the adapter's own answer) when there is nothing to
// decide.
func (h *hookRun) decideOutput(c *cobra.Command, in []byte, out []byte, cr []claims.Request) []byte {
	var p hookCall
	if len(in) == 0 || json.Unmarshal(in, &p) != nil {
		return out
	}
	agent := h.agent
	session := p.Session
	if session == "" {
		session = p.Conv
	}
	if s := os.Getenv("HARN_SESSION"); s != "" && os.Getenv("HARN_TASK") != "" {
		session = s // an agent run by a harn executor: its runtime session
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
		if agent == "codex" {
			phase = tasks.PhasePre // Codex is enforced at its permission request
		}
	case "afterFileEdit": // Cursor: the edit is done; claim it, warn at most
		if len(cr) == 0 {
			return out
		}
		phase = tasks.PhasePost
	default:
		return out
	}
	if phase != "" {
		v, ok := h.decide(tasks.Query{Phase: phase, Session: session, Task: os.Getenv("HARN_TASK"), Tool: p.Tool,
			Input: p.Input, Call: p.ToolUseID, Failed: p.Event == "PostToolUseFailure" || p.Event == "postToolUseFailure"}, cr)
		if ok && v.Decision == tasks.DecideDeny {
			return denyOutput(agent, p.Event, v.Reason)
		}
		if ok && v.Decision == claims.DecideWarn {
			return warnOutput(agent, v.Reason)
		}
	}
	if p.Event != "PermissionRequest" {
		return out
	}
	if on, _ := c.Flags().GetBool("remote-approve"); !on {
		return out
	}
	wait, _ := c.Flags().GetDuration("approve-wait")
	if wait <= 0 || wait > maxApproveWait {
		wait = defaultApproveWait
	}
	return h.remoteApprove(agent, session, p, wait, out)
}

// decide asks the node; ok is false when it did not answer in time (the
// call is then allowed, and a diagnostic says so).
func (h *hookRun) decide(q tasks.Query, cr []claims.Request) (tasks.Verdict, bool) {
	cl, err := h.client()
	if err != nil {
		return tasks.Verdict{}, false
	}
	// The claims ride beside the task runtime's fields (node/claims_wire.go).
	b, _ := json.Marshal(struct {
		tasks.Query
		Claims []claims.Request `json:"claims,omitempty"`
	}{q, cr})
	ctx, cancel := context.WithTimeout(context.Background(), decideWait)
	defer cancel()
	r, err := cl.api.Decide(ctx, &api.DecideRequest{QueryJson: b})
	if err != nil {
		if q.Phase == tasks.PhasePre && (q.Task != "" || len(cr) > 0 || ctx.Err() != nil) {
			h.diagnose(fmt.Sprintf("pre-call check: the node did not answer within %s (%s); the %s call was allowed",
				decideWait, text.OneLine(err.Error()), text.Clip(q.Tool, 60)), nil)
		}
		return tasks.Verdict{}, false
	}
	return tasks.Verdict{Decision: r.Decision, Reason: r.Reason, Task: r.Task, Call: r.Call}, true
}

// remoteApprove registers the request with the node and waits for a
// decision from anywhere in the mesh; none in time gives out (the agent
// shows its own prompt).
func (h *hookRun) remoteApprove(agent, session string, p hookCall, wait time.Duration, out []byte) []byte {
	cl, err := h.client()
	if err != nil {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+2*time.Second)
	defer cancel()
	r, err := cl.api.AwaitApproval(ctx, &api.ApprovalRequest{Session: session, Agent: agent, Tool: p.Tool,
		Input: p.Input, WaitMs: wait.Milliseconds()})
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
