package hook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/install"
	"github.com/harn-dev/harn/node/api/hookwire"
	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
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

// callPlan is the decision path's reading of a tool call's hook payload:
// the call as the agent's adapter reads it (adapter.Planner), and the
// question the node is to answer, if any.
type callPlan struct {
	ad      adapter.Adapter
	call    adapter.Call
	session string
	ok      bool // the payload decoded
	ask     bool // there is a question for the node
	q       taskwire.Query
	cr      []claimwire.Request
	body    *hookwire.DecideQuery // q with the claims beside it
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
// payload), as the agent's adapter plans it; cr are the claims the call
// would take.
func (h *hookRun) planCall(in []byte, cr []claimwire.Request) callPlan {
	var pl callPlan
	ad, _ := all.Lookup(h.agent)
	planner, ok := ad.(adapter.Planner)
	if !ok {
		return pl
	}
	if pl.call, pl.ok = planner.PlanCall(in, len(cr) > 0); !pl.ok {
		return pl
	}
	pl.ad, pl.cr = ad, cr
	c := &pl.call
	pl.session = c.Session
	if s := os.Getenv("HARN_SESSION"); s != "" && os.Getenv("HARN_TASK") != "" {
		pl.session = s // an agent run by a harn executor: its runtime session
	}
	phase := ""
	switch c.Phase {
	case adapter.PhasePre:
		phase = taskwire.PhasePre
	case adapter.PhasePost:
		phase = taskwire.PhasePost
	}
	if phase == "" {
		return pl
	}
	pl.ask = true
	pl.q = taskwire.Query{Phase: phase, Session: pl.session, Task: os.Getenv("HARN_TASK"), Tool: c.Tool,
		Input: c.Input, Call: c.ID, Failed: c.Failed, Cwd: c.Cwd}
	// The claims ride beside the task runtime's fields (node/claims_wire.go).
	pl.body = decideQuery(pl.q, cr)
	return pl
}

// decideOutput runs the decision path for a tool call's hook and returns
// what to print: a denial in the agent's own format, a remote approval's
// decision, or out (the adapter's own answer) when there is nothing to
// decide. answer is the node's answer to pl's question given with the
// events (nil when it did not come that way: the node is then asked on
// its own).
func (h *hookRun) decideOutput(c *cobra.Command, pl callPlan, answer *hookwire.DecideResponse, out []byte) []byte {
	if !pl.ok {
		return out
	}
	if pl.ask {
		v, ok := verdictOf(answer), answer != nil
		if !ok {
			v, ok = h.decide(pl)
		}
		if ok && v.Decision == taskwire.DecideConfirm {
			v = h.awaitConfirm(c, pl, v)
		}
		if ans, ok2 := pl.ad.(adapter.Answerer); ok && ok2 {
			switch {
			case v.Decision == taskwire.DecideDeny:
				return ans.Deny(pl.call, v.Reason)
			case v.Decision == taskwire.DecideAllow && v.Reason != "":
				return ans.Allow(pl.call, v.Reason) // confirmed by an operator
			case v.Decision == claimwire.DecideWarn:
				return ans.Warn(pl.call, v.Reason)
			}
		}
	}
	ap, ok := pl.ad.(adapter.Approver)
	if !pl.call.Permission || !ok {
		return out
	}
	if on, _ := c.Flags().GetBool("remote-approve"); !on {
		return out
	}
	wait, _ := c.Flags().GetDuration("approve-wait")
	if wait <= 0 || wait > maxApproveWait {
		wait = defaultApproveWait
	}
	return h.remoteApprove(h.agent, ap, pl, wait, out)
}

// decideQuery is the question of a tool call's hook: the task runtime's
// query, its claims beside it.
func decideQuery(q taskwire.Query, cr []claimwire.Request) *hookwire.DecideQuery {
	// As taskapi.QueryToAPI and claimwire.ToAPI, in the hook's codec.
	out := &hookwire.DecideQuery{Phase: q.Phase, Session: q.Session, Task: q.Task, Tool: q.Tool, Input: q.Input,
		Call: q.Call, Failed: q.Failed, WaitMs: q.Wait.Milliseconds(), Cwd: q.Cwd}
	for _, r := range cr {
		out.Claims = append(out.Claims, &hookwire.PathClaim{Session: r.Session, Repo: r.Repo, Paths: r.Paths, Phase: r.Phase, Abs: r.Abs})
	}
	return out
}

func verdictOf(r *hookwire.DecideResponse) taskwire.Verdict {
	if r == nil {
		return taskwire.Verdict{}
	}
	return taskwire.Verdict{Decision: r.Decision, Reason: r.Reason, Task: r.Task, Call: r.Call}
}

// decide asks the node on its own (when the events did not carry the
// question: they were spooled, or the node gave no answer there); ok is
// false when it did not answer in time (the call is then allowed, and a
// diagnostic says so).
func (h *hookRun) decide(pl callPlan) (taskwire.Verdict, bool) {
	q := pl.q
	cl, err := h.client()
	if err != nil {
		return taskwire.Verdict{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), decideWait)
	defer cancel()
	r, err := cl.Decide(ctx, &hookwire.DecideRequest{Query: pl.body})
	if err != nil {
		if q.Phase == taskwire.PhasePre && (q.Task != "" || len(pl.cr) > 0 || ctx.Err() != nil) {
			h.diagnose(fmt.Sprintf("pre-call check: the node did not answer within %s (%s); the %s call was allowed",
				decideWait, text.OneLine(err.Error()), text.Clip(q.Tool, 60)), nil)
		}
		return taskwire.Verdict{}, false
	}
	return verdictOf(r), true
}

// awaitConfirm waits (up to --approve-wait) for the operator's answer to
// a call that needs a confirmation: the node holds the call pending and
// shows the session as needing input meanwhile. A node that does not
// answer in time gets the call denied: a confirmation is never skipped.
func (h *hookRun) awaitConfirm(c *cobra.Command, pl callPlan, first taskwire.Verdict) taskwire.Verdict {
	wait, _ := c.Flags().GetDuration("approve-wait")
	if wait <= 0 || wait > maxApproveWait {
		wait = defaultApproveWait
	}
	deny := func(why string) taskwire.Verdict {
		return taskwire.Verdict{Decision: taskwire.DecideDeny, Task: first.Task, Call: first.Call,
			Reason: text.Clip(fmt.Sprintf("harn task %s: call %s needs a confirmation (`harn task confirm %s %s`): %s", first.Task, first.Call, first.Task, first.Call, why), 400)}
	}
	q := pl.q
	q.Wait = wait
	if q.Call == "" {
		q.Call = first.Call
	}
	body := decideQuery(q, pl.cr)
	cl, err := h.client()
	if err != nil {
		return deny("the node is not reachable")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+2*time.Second)
	defer cancel()
	r, err := cl.Decide(ctx, &hookwire.DecideRequest{Query: body})
	if err != nil {
		return deny("the node did not answer: " + text.OneLine(err.Error()))
	}
	v := verdictOf(r)
	if v.Decision == taskwire.DecideConfirm || v.Decision == taskwire.DecideNone {
		return deny("no answer within " + wait.String())
	}
	return v
}

// remoteApprove registers the request with the node and waits for a
// decision from anywhere in the mesh; none in time gives out (the agent
// shows its own prompt).
func (h *hookRun) remoteApprove(agent string, ap adapter.Approver, pl callPlan, wait time.Duration, out []byte) []byte {
	req := &hookwire.ApprovalRequest{Session: pl.session, Agent: agent, Tool: pl.call.Tool, Input: pl.call.Input, WaitMs: wait.Milliseconds(),
		Cwd: pl.call.Cwd}
	sa, sessionWide := ap.(adapter.SessionApprover)
	req.SessionWide = sessionWide
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
	r, err := cl.AwaitApproval(ctx, req)
	if err != nil {
		h.diagnose("remote approval: "+text.OneLine(err.Error())+"; the agent's own prompt is shown", nil)
		return out
	}
	switch r.Decision {
	case "allow":
		if r.SessionWide && sessionWide {
			return sa.PermissionForSession(pl.call.Tool)
		}
		return ap.Permission(true, "")
	case "deny":
		msg := "denied by " + r.By
		if r.Reason != "" {
			msg += ": " + r.Reason
		}
		return ap.Permission(false, msg)
	}
	return out
}

// addRemoteApproveFlags adds --remote-approve and --approve-wait to `harn
// hook install`.
func AddRemoteApproveFlags(c *cobra.Command, use string) {
	if use != "install" {
		return
	}
	c.Flags().Bool("remote-approve", false, approvers()+": the hook waits for permission decisions given anywhere in the mesh (the local prompt is not shown while it waits)")
	c.Flags().Duration("approve-wait", 0, "with --remote-approve: how long the hook waits (default 30s)")
}

// remoteApproveOptions reads the install flags into o.
func RemoteApproveOptions(c *cobra.Command, o *install.Options) error {
	if c.Flags().Lookup("remote-approve") == nil {
		return nil
	}
	o.RemoteApprove, _ = c.Flags().GetBool("remote-approve")
	o.ApproveWait, _ = c.Flags().GetDuration("approve-wait")
	if !o.RemoteApprove {
		if o.ApproveWait != 0 {
			return UsageErr(errors.New("--approve-wait needs --remote-approve"))
		}
		return nil
	}
	if !Approves(o.Agent) {
		return UsageErr(fmt.Errorf("--remote-approve works for %s, not %q", strings.Join(ApproverNames(), " and "), o.Agent))
	}
	if o.ApproveWait < 0 || o.ApproveWait > maxApproveWait {
		return UsageErr(fmt.Errorf("--approve-wait %s: give a duration between 1s and %s", o.ApproveWait, maxApproveWait))
	}
	return nil
}

// approves reports whether agent's adapter answers a permission request
// decided elsewhere (adapter.Approver) and its hook install knows where
// that request waits.
func Approves(agent string) bool {
	ad, ok := all.Lookup(agent)
	if _, ap := ad.(adapter.Approver); !ok || !ap {
		return false
	}
	is, ok := all.Install(agent)
	return ok && is.Settings != nil && is.Settings.ApproveEvent != ""
}

// approverNames lists the agents --remote-approve works for.
func ApproverNames() []string {
	var out []string
	for _, n := range all.Installable() {
		if Approves(n) {
			out = append(out, n)
		}
	}
	return out
}

func approvers() string { return strings.Join(ApproverNames(), ", ") }
