package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/callfacts"
	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/text"
)

// Bounds of the task paths.
const (
	// taskRouteTimeout bounds one routed task action.
	taskRouteTimeout = 10 * time.Second
	// maxApproveWait bounds how long a hook may wait for a remote decision.
	maxApproveWait = 10 * time.Minute
	// maxDecideWait bounds a pre-call check that waits for a confirmation:
	// the same bound as a remote approval's wait.
	maxDecideWait = maxApproveWait
	// appendDecideBound bounds the answer to an Append's decide, as
	// the hook bounds a separate Decide call.
	appendDecideBound = 300 * time.Millisecond
)

// openTasks builds the task runtime host on the node's ledger and key.
func (n *Node) openTasks() error {
	// HARN_TASK_GRACE sets the barrier's grace period (and the time from
	// SIGINT to SIGKILL); default 10 s.
	grace, _ := time.ParseDuration(os.Getenv("HARN_TASK_GRACE"))
	var tracer agent.Tracer
	if n.cfg.TracerProvider != nil {
		tracer = tasks.GenAITracer(n.tracer, n.cfg.LogPrompts)
	}
	h, err := tasks.New(tasks.Config{Node: n.cfg.Name, KV: n.ledger, Key: n.key, Grace: grace, Tracer: tracer,
		Sink: sinkFunc(func(evs []presence.Event) error { _, err := n.Ingest(evs); return err }),
		// The ingest is a synced write to the same ledger as KV.
		IngestSyncsKV: true,
		Sessions:      sessionsFunc(n.resolveLocal), Clock: n.cfg.Clock, Logger: n.log.With("room", "tasks"),
		Env:      []string{"HARN_DATA_DIR=" + n.cfg.DataDir, "HARN_SOCKET=" + n.cfg.Socket},
		OnChange: n.taskChanged, OnFirstByte: n.cfg.OnTaskFirstByte, Launchers: n.cfg.Launchers, NoCompaction: n.cfg.NoCompaction,
		Bounds:   n.cfg.AgentBounds,
		Provider: n.cfg.Provider,
		// Each harn session gets its own tool box: the core and discovery
		// tools, the skills of its project (when trusted) and of the user,
		// the servers of the user's (this node's) and the trusted
		// project's mcp.json, then its own --mcp servers.
		Boxes: tasks.Toolboxes(tools.Config{Clock: n.cfg.Clock, Logger: n.log.With("room", "tools"),
			ShellGrace: tasks.ShellGraceFor(grace), Guard: n.cfg.ToolGuard, OnGroup: n.recordToolGroup}),
		// A project's .harn files load only where this node trusts it.
		Trust: projectTrust{n}})
	if err != nil {
		return err
	}
	n.tasks = h
	n.remotePol = n.remotePolicy()
	n.wireApprovals()
	// What tools of the previous run still run (it died) goes first.
	n.reapToolGroups()
	// Runtime sessions are memory-only: end those the previous run left.
	live := n.sess.Live()
	if _, err := h.Recover(live); err != nil {
		n.log.Warn("closing the previous run's runtime sessions", "err", err)
	}
	// Task records and unknown-outcome holds come back from the ledger:
	// `harn task show` answers for them, and a hold still waits for ack.
	if _, err := h.Rebuild(live); err != nil {
		n.log.Warn("rebuilding task records from the ledger", "err", err)
	}
	// Children are not resumed either: each parent's trace says which
	// were lost.
	if lost, err := h.RecoverSubagents(); err != nil || len(lost) > 0 {
		n.log.Info("subagents lost at the restart", "count", len(lost), "err", err)
	}
	return nil
}

type sinkFunc func([]presence.Event) error

func (f sinkFunc) Ingest(evs []presence.Event) error { return f(evs) }

type sessionsFunc func(string) (presence.State, error)

func (f sessionsFunc) Resolve(h string) (presence.State, error) { return f(h) }

// Tasks is the node's task runtime host (tests, benchmarks).
func (n *Node) Tasks() *tasks.Host { return n.tasks }

func (n *Node) tasksHost() *tasks.Host { return n.tasks }

// harnTask is the roster's view of a session's harn task, nil without one.
func (n *Node) harnTask(session string) *api.HarnTask {
	if n.tasks == nil {
		return nil
	}
	b, ok := n.tasks.Brief(session)
	if !ok {
		return nil
	}
	return gossip.BoundedTask(&api.HarnTask{Id: b.ID, State: b.State, Status: b.Status, Text: b.Text,
		QueueDepth: int32(min(b.QueueDepth, 1<<30)), PendingCalls: b.PendingCalls})
}

// decorateEntry adds the harn task to a gossiped entry.
func (n *Node) decorateEntry(e *gossip.Entry) {
	if t := n.harnTask(e.GetSessionId()); t != nil {
		e.HarnTask = t
		e.Hash = gossip.WithTask(e.Hash, t)
	}
	if e.SessionRow != nil {
		st := e.SessionRow.State()
		if v := n.hosts.View(&st); v != nil {
			e.Hosted = gossip.BoundedHosted(v)
			e.Hash = gossip.WithHosted(e.Hash, e.Hosted)
		}
	}
}

// taskChanged gossips a session's entry
// again: a task's state changed without a presence event.
func (n *Node) taskChanged(session string) {
	st, hash, ok := n.sess.Invalidate(session)
	if ok && n.cl != nil && !st.Ended {
		n.cl.Publish(st, hash, true, false)
	}
}

// taskStatus maps a task action's error to a gRPC status: InvalidArgument
// (bad input), NotFound (no such session or task), FailedPrecondition (a
// runtime rule refused it), PermissionDenied (remote control refused).
func taskStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, ErrUnknownSession):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrAmbiguous):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, trust.ErrRemoteControl), errors.Is(err, ErrRemoteRefused), errors.Is(err, ErrRemoteExec),
		errors.Is(err, remotepolicy.ErrRefused):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, tasks.ErrNoRequest):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, tasks.ErrAnswered), errors.Is(err, tasks.ErrExpired), errors.Is(err, tasks.ErrNotSessionWide):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, tasks.ErrTooMany):
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	switch tasks.KindOf(err) {
	case tasks.KindBadInput:
		return status.Error(codes.InvalidArgument, err.Error())
	case tasks.KindNotFound:
		return status.Error(codes.NotFound, err.Error())
	case tasks.KindRefused:
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// ---- the local service ----

func (s *localService) Task(ctx context.Context, req *api.TaskRequest) (*api.TaskResponse, error) {
	a, err := tasks.ActionFromAPI(req.Action)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "task: malformed action: "+err.Error())
	}
	a.By = operator.By(ctx, s.n.cfg.Name, a.By)
	if a.Op == tasks.OpUsage && req.Node == "" {
		return s.n.usageMesh(ctx, a)
	}
	res, err := s.n.routeTask(ctx, req.Node, a)
	if err != nil {
		return nil, taskStatus(err)
	}
	return res, nil
}

// routeTask runs a on this node, or routes it to the node that owns its
// session or task.
func (n *Node) routeTask(ctx context.Context, target string, a tasks.Action) (*api.TaskResponse, error) {
	if target != "" && target != n.cfg.Name {
		return n.remoteTask(ctx, target, a)
	}
	local := target == n.cfg.Name || n.cl == nil || (a.Op == tasks.OpStart && (a.Command != "" || a.Launcher != ""))
	if !local && tasks.IsSessionOp(a.Op) {
		if n.tasks.Hosts(a.Session) {
			local = true
		} else if _, err := n.resolveLocal(a.Session); err == nil || !errors.Is(err, ErrUnknownSession) {
			local = true
		} else if rec, rerr := n.resolveRecord(a.Session); rerr == nil && rec.Node != n.cfg.Name {
			return n.remoteTask(ctx, rec.Node, a)
		} else {
			local = true
		}
	}
	if res, ok, err := n.hosts.Task(a); ok {
		return res, err
	}
	res, err := n.doTask(a)
	if err == nil || local || tasks.KindOf(err) != tasks.KindNotFound {
		return res, err
	}
	// A task id this node does not know: ask the reachable peers.
	for name, m := range n.reachability() {
		if name == n.cfg.Name || !reachable(m, true) {
			continue
		}
		out, rerr := n.remoteTask(ctx, name, a)
		if status.Code(rerr) == codes.NotFound {
			continue
		}
		return out, rerr
	}
	return nil, err
}

func (n *Node) doTask(a tasks.Action) (*api.TaskResponse, error) {
	res, err := n.tasks.Do(a)
	if err != nil {
		return nil, err
	}
	return &api.TaskResponse{Result: tasks.ResultToAPI(res), Node: n.cfg.Name}, nil
}

// remoteTask sends a to node over the cluster gRPC; the answer's status
// (and so the caller's exit code) is the target's.
func (n *Node) remoteTask(ctx context.Context, node string, a tasks.Action) (*api.TaskResponse, error) {
	if n.cl == nil {
		return nil, status.Error(codes.Unimplemented, fmt.Sprintf("task: --node %s needs the mesh on; this node runs alone", node))
	}
	cl, err := n.cl.ClientOf(node)
	if err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	a.By = operator.Part(a.By)
	if a.Harn != nil { // a provider key never leaves the node it was given to
		o := *a.Harn
		o.Key = ""
		a.Harn = &o
	}
	rctx, cancel := context.WithTimeout(ctx, taskRouteTimeout)
	defer cancel()
	res, err := cl.Task(rctx, &api.TaskRequest{Action: tasks.ActionToAPI(a), Node: node})
	if err != nil {
		if st, ok := status.FromError(err); ok && (st.Code() == codes.Unavailable || st.Code() == codes.DeadlineExceeded) {
			return nil, apigrpc.WithReason(codes.Unavailable, api.ReasonOwnerUnreachable,
				fmt.Sprintf("task: node %s did not answer: %s", node, st.Message()))
		}
		return nil, err
	}
	return res, nil
}

func (s *localService) Decide(ctx context.Context, req *api.DecideRequest) (*api.DecideResponse, error) {
	if req.Query == nil {
		return nil, status.Error(codes.InvalidArgument, "decide: no query")
	}
	return s.n.decide(ctx, tasks.QueryFromAPI(req.Query), claims.FromAPI(req.Query.Claims)), nil
}

// decide answers a hook's question about one tool call: the task
// runtime's checks first, then the claims (unless the task refused it).
// cr are the claims the hook sent beside q.
func (n *Node) decide(ctx context.Context, q tasks.Query, cr []claims.Request) *api.DecideResponse {
	q.Wait = min(max(q.Wait, 0), maxDecideWait)
	call := callRef(q)
	if d := n.claims.Load(); d != nil {
		switch q.Phase {
		case tasks.PhasePre:
			d.BeginCall(q.Session, call)
		case tasks.PhasePost:
			if err := d.CallEnded(ctx, q.Session, call, q.Failed); err != nil {
				n.log.Warn("claims: a failed write's claim was not released", "session", q.Session, "err", err)
			}
		}
	}
	v := n.tasks.Decide(ctx, q)
	if v.Decision == tasks.DecideAllow || v.Decision == tasks.DecideNone {
		if r, ok := n.decideClaims(ctx, cr, call); ok {
			return r
		}
	} else if v.Decision == tasks.DecideDeny {
		n.claimsRefused(cr)
	}
	return &api.DecideResponse{Decision: v.Decision, Reason: v.Reason, Task: v.Task, Call: v.Call}
}

// decideInAppend answers an Append's decide (the events are stored by
// then); the answer is bounded like a separate Decide call's.
func (n *Node) decideInAppend(ctx context.Context, query *api.DecideQuery) *api.DecideResponse {
	q := tasks.QueryFromAPI(query)
	q.Wait = 0 // a confirmation wait needs its own Decide call (the answer is confirm)
	ctx, cancel := context.WithTimeout(ctx, appendDecideBound)
	defer cancel()
	return n.decide(ctx, q, claims.FromAPI(query.Claims))
}

func (s *localService) AwaitApproval(ctx context.Context, req *api.ApprovalRequest) (*api.ApprovalResponse, error) {
	wait := min(time.Duration(max(req.WaitMs, 0))*time.Millisecond, maxApproveWait)
	r := tasks.Request{Session: req.Session, Agent: req.Agent, Tool: req.Tool, Summary: tasks.Summarize(req.Tool, req.Input),
		Detail: tasks.Detail(req.Tool, req.Input), SessionWide: req.SessionWide,
		Key: text.Clip(req.RequestKey, presence.MaxIDLen+8), Parent: text.Clip(req.ParentSession, presence.MaxIDLen)}
	s.n.requestFacts(&r)
	cwd := req.Cwd
	if cwd == "" {
		cwd = r.Cwd // the session's
	}
	r.Facts = callfacts.Of(req.Agent, req.Tool, req.Input, cwd)
	r, ans, ok, err := s.n.tasks.Approvals().Await(ctx, r, wait)
	if err != nil {
		return nil, taskStatus(err)
	}
	if !ok {
		return &api.ApprovalResponse{Decision: "none", Request: r.ID}, nil
	}
	d := "deny"
	if ans.Allow {
		d = "allow"
	} else {
		s.n.releaseDeniedClaims(ctx, r.Session, approvalCallRef(req))
	}
	return &api.ApprovalResponse{Decision: d, Reason: ans.Reason, Request: r.ID, By: ans.By, SessionWide: ans.SessionWide}, nil
}

func (s *localService) Pending(ctx context.Context, req *api.PendingRequest) (*api.PendingResponse, error) {
	out := &api.PendingResponse{}
	for _, r := range s.n.waiting() {
		out.Requests = append(out.Requests, tasks.RequestToAPI(r))
	}
	if req.LocalOnly || s.n.cl == nil {
		return out, nil
	}
	for name, m := range s.n.reachability() {
		if name == s.n.cfg.Name || !reachable(m, true) {
			continue
		}
		cl, err := s.n.cl.ClientOf(name)
		if err != nil {
			out.Unreachable = append(out.Unreachable, name)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, s.n.cfg.Cluster.OwnerReadTimeout)
		res, err := cl.Pending(rctx, &api.PendingRequest{LocalOnly: true})
		cancel()
		if err == nil {
			err = checkPeerList("node "+name, "pending requests", len(res.Requests))
		}
		if err != nil {
			out.Unreachable = append(out.Unreachable, name)
			continue
		}
		out.Requests = append(out.Requests, res.Requests...)
	}
	return out, nil
}

func (s *localService) Answer(ctx context.Context, req *api.AnswerRequest) (*api.AnswerResponse, error) {
	by := operator.By(ctx, s.n.cfg.Name, req.By)
	r, err := s.n.tasks.Approvals().AnswerWith(req.Request, req.Allow, req.SessionWide, by, req.Reason)
	if err == nil || !errors.Is(err, tasks.ErrNoRequest) || req.LocalOnly || s.n.cl == nil {
		if err != nil {
			return nil, taskStatus(err)
		}
		return &api.AnswerResponse{Request: tasks.RequestToAPI(r)}, nil
	}
	for name, m := range s.n.reachability() {
		if name == s.n.cfg.Name || !reachable(m, true) {
			continue
		}
		cl, cerr := s.n.cl.ClientOf(name)
		if cerr != nil {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, taskRouteTimeout)
		res, rerr := cl.Answer(rctx, &api.AnswerRequest{Request: req.Request, Allow: req.Allow, Reason: req.Reason, LocalOnly: true,
			SessionWide: req.SessionWide,
			By:          operator.Part(by)})
		cancel()
		if status.Code(rerr) == codes.NotFound {
			continue
		}
		return res, rerr
	}
	return nil, taskStatus(err)
}

// ---- the cluster service ----

func (s peerService) Task(ctx context.Context, req *api.TaskRequest) (*api.TaskResponse, error) {
	a, err := tasks.ActionFromAPI(req.Action)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "task: malformed action: "+err.Error())
	}
	h := s.n.tasks
	if h == nil {
		return nil, status.Error(codes.Unavailable, "task: this node hosts no task runtimes")
	}
	// A task this node does not have is not found here, whoever asks, so
	// that a caller's search goes on to the next node.
	if !tasks.IsSessionOp(a.Op) && a.Op != tasks.OpUsage {
		if _, ok := h.SessionOfTask(a.Task); !ok {
			return nil, status.Error(codes.NotFound, fmt.Sprintf("task: no task %q on node %s", a.Task, s.n.cfg.Name))
		}
	}
	id, err := s.n.gate.Authorize(ctx, "task "+a.Op)
	if err != nil {
		return nil, taskStatus(err)
	}
	if err := s.n.gate.AuthorizeStart(id, a); err != nil {
		return nil, taskStatus(err)
	}
	a.By = operator.Remote(a.By, id)
	if a.Harn != nil { // the node's own key, never a caller's
		o := *a.Harn
		o.Key = ""
		a.Harn = &o
	}
	if err := s.n.admitRemote(id, &a); err != nil { // remote_policy.go: provider, workdir, grants
		return nil, taskStatus(err)
	}
	s.n.log.Info("remote task action", "op", a.Op, "by", a.By, "session", text.Clip(text.OneLine(a.Session), 64),
		"task", text.Clip(text.OneLine(a.Task), 64), "launcher", text.Clip(text.OneLine(a.Launcher), 64))
	if res, ok, err := s.n.hosts.Task(a); ok {
		return res, err
	}
	res, err := h.Do(a)
	if err != nil {
		return nil, taskStatus(err)
	}
	return &api.TaskResponse{Result: tasks.ResultToAPI(res), Node: s.n.cfg.Name}, nil
}

// Pending lists this node's open permission requests and confirmations
// to a member. The call in full (its command, file, diff and Detail: a
// command's arguments) goes only to a caller this node's --remote-control
// policy allows, who may answer it; any other member gets the summary, as
// the gossiped trace carries it, and so still learns which session waits
// where.
func (s peerService) Pending(ctx context.Context, _ *api.PendingRequest) (*api.PendingResponse, error) {
	out := &api.PendingResponse{}
	h := s.n.tasks
	if h == nil {
		return out, nil
	}
	full := s.n.gate.Allowed(ctx)
	for _, r := range waitingOf(h, s.n.requestFacts) {
		if !full {
			r = r.Summarized()
		}
		out.Requests = append(out.Requests, tasks.RequestToAPI(r))
	}
	return out, nil
}

func (s peerService) Answer(ctx context.Context, req *api.AnswerRequest) (*api.AnswerResponse, error) {
	h := s.n.tasks
	if h == nil {
		return nil, status.Error(codes.NotFound, tasks.ErrNoRequest.Error())
	}
	// An unknown request is not a remote action yet: say so without
	// asking for credentials, so that a fan-out can go on.
	if !h.Approvals().Has(req.Request) {
		return nil, status.Error(codes.NotFound, fmt.Sprintf("%s %q", tasks.ErrNoRequest, req.Request))
	}
	id, err := s.n.gate.Authorize(ctx, "answer")
	if err != nil {
		return nil, taskStatus(err)
	}
	r, err := h.Approvals().AnswerWith(req.Request, req.Allow, req.SessionWide, operator.Remote(req.By, id), req.Reason)
	if err != nil {
		return nil, taskStatus(err)
	}
	return &api.AnswerResponse{Request: tasks.RequestToAPI(r)}, nil
}

// usageMesh sums the model-call usage of every node's ledger: this
// node's and, at once, each member's the mesh knows, each asked within
// taskRouteTimeout. A member that is down or does not answer in time is
// named in the answer's message, so that a partial sum says so. Every
// row carries the node whose ledger holds it.
func (n *Node) usageMesh(ctx context.Context, a tasks.Action) (*api.TaskResponse, error) {
	res, err := n.tasks.Do(a)
	if err != nil {
		return nil, taskStatus(err)
	}
	for i := range res.Usage {
		res.Usage[i].Node = n.cfg.Name
	}
	type answer struct {
		node string
		rows []tasks.UsageRow
		err  error
	}
	var missing []string
	ch := make(chan answer)
	asked := 0
	for name, m := range n.reachability() {
		if name == n.cfg.Name {
			continue
		}
		if !reachable(m, true) {
			missing = append(missing, name+" (unreachable)")
			continue
		}
		asked++
		go func() {
			out, rerr := n.remoteTask(ctx, name, a) // bounded by taskRouteTimeout
			var rows []tasks.UsageRow
			if rerr == nil {
				var r tasks.Result
				if r, rerr = tasks.ResultFromAPI(out.Result); rerr == nil {
					rows = r.Usage
				}
			}
			ch <- answer{node: name, rows: rows, err: rerr}
		}()
	}
	for range asked {
		an := <-ch
		if an.err != nil {
			n.log.Debug("usage: node did not answer", "node", an.node, "err", an.err)
			missing = append(missing, an.node+" ("+text.Clip(text.OneLine(status.Convert(an.err).Message()), 120)+")")
			continue
		}
		for _, u := range an.rows[:min(len(an.rows), maxUsageRows)] {
			u.Node = an.node
			res.Usage = append(res.Usage, u)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		res.Message = "usage is missing the ledgers of " + strings.Join(missing, ", ")
	}
	return &api.TaskResponse{Result: tasks.ResultToAPI(res), Node: n.cfg.Name}, nil
}

// maxUsageRows bounds the usage rows taken from one peer.
const maxUsageRows = 4096
