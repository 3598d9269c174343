// Package tasksvc is the task service's room: it answers the task
// calls of the local socket (Task, Decide, AwaitApproval, Pending,
// Answer) and of other nodes (the cluster gRPC's Task, Pending, Answer,
// behind node/operator's gate and node/remotepolicy), routes an action to
// the node that owns its session or task, sums the mesh's usage, and
// joins the task runtimes' decision on a tool call with the write claims
// (node/claims). It holds the task runtimes (node/tasks) the root opened
// and reads the rest of the node through the interfaces and funcs of
// Deps, declared here.
package tasksvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/callfacts"
	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/text"
)

// Sessions is what the service reads of this node's sessions.
type Sessions interface {
	Resolve(handle string) (presence.State, error)
}

// Mesh is what the service needs of the mesh.
type Mesh interface {
	ClientOf(node string) (apigrpc.ClusterClient, error)
	Registry() cluster.Replica
	Apply(ctx context.Context, cmd raftstore.Command) (uint64, error)
}

// Hosted runs a steer or follow-up of a hosted session (node/hosted/hostedsvc).
type Hosted interface {
	Task(a tasks.Action) (*api.TaskResponse, bool, error)
	View(st *presence.State) *api.HostedView
}

// Deps wires the service to the rest of the node.
type Deps struct {
	Node  string
	Log   *slog.Logger
	Clock clock.Clock
	Tasks *tasks.Host
	Gate  *operator.Gate
	// Policy is what a caller on another node may choose here.
	Policy   func() remotepolicy.Config
	Hosted   Hosted
	Sessions Sessions
	// Mesh is the mesh, nil without it; Record resolves a handle in the
	// registry (with the mesh); Members are the mesh's members, each
	// with whether it is reachable.
	Mesh    func() Mesh
	Record  func(handle string) (raftstore.Record, error)
	Members func() map[string]bool
	// OwnerReadTimeout bounds one peer's listing; ForwardTimeout a
	// switch's registry write.
	OwnerReadTimeout, ForwardTimeout time.Duration
	// Claims is the claims room, nil until it opened.
	Claims   func() *claims.Decider
	Diagnose func(ledger.Diagnostic)
	// Facts adds a session's facts to a waiting request; Waiting lists
	// this node's calls that wait for an operator, with their facts.
	Facts   func(*tasks.Request)
	Waiting func() []tasks.Request
}

// Service is the task service.
type Service struct{ Deps }

// New builds the service. It does no I/O.
func New(d Deps) *Service { return &Service{Deps: d} }

// TaskLocal is the task part of the Local service on the local socket.
type TaskLocal struct{ *Service }

// TaskPeer is the task part of the cluster gRPC's peer service.
type TaskPeer struct{ *Service }

// Local is the service's part of the local socket.
func (s *Service) Local() *TaskLocal { return &TaskLocal{s} }

// Peer is the service's part of the cluster gRPC.
func (s *Service) Peer() *TaskPeer { return &TaskPeer{s} }

// hostSessions is what the policy reads of the task host.
type hostSessions struct{ h *tasks.Host }

func (s hostSessions) Workdir(handle string) (string, bool)        { return s.h.LoopWorkdir(handle) }
func (s hostSessions) Head(handle string) string                   { return s.h.HeadTask(handle) }
func (s hostSessions) SessionOf(task string) (string, bool)        { return s.h.SessionOfTask(task) }
func (s hostSessions) Grants(task string) ([]runtime.Grant, error) { return s.h.TaskGrants(task) }
func (s hostSessions) SessionGrants(handle string) ([]runtime.Grant, bool) {
	return s.h.HeldGrants(handle)
}

// admit applies the node's remotepolicy to an admitted caller's action,
// and fills in what the caller may not choose. Every refusal is logged
// here, at the target.
func (s *Service) admit(id trust.Identity, a *tasks.Action) error {
	if s.Tasks == nil {
		return nil
	}
	if err := s.Policy().Admit(hostSessions{s.Tasks}, a); err != nil {
		s.Log.Warn("remote task action refused", "op", a.Op, "caller", id.String(), "err", text.Clip(text.OneLine(err.Error()), 300))
		return err
	}
	return nil
}

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

// Status maps a task action's error to a gRPC status: InvalidArgument
// (bad input), NotFound (no such session or task), FailedPrecondition (a
// runtime rule refused it), PermissionDenied (remote control refused).
func Status(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, sessions.ErrUnknownSession):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, sessions.ErrAmbiguous):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, trust.ErrRemoteControl), errors.Is(err, operator.ErrRemoteRefused), errors.Is(err, operator.ErrRemoteExec),
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

func (s *TaskLocal) Task(ctx context.Context, req *api.TaskRequest) (*api.TaskResponse, error) {
	a, err := tasks.ActionFromAPI(req.Action)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "task: malformed action: "+err.Error())
	}
	a.By = operator.By(ctx, s.Node, a.By)
	if a.Op == tasks.OpUsage && req.Node == "" {
		return s.UsageMesh(ctx, a)
	}
	res, err := s.Route(ctx, req.Node, a)
	if err != nil {
		return nil, Status(err)
	}
	return res, nil
}

// Route runs a on this node, or routes it to the node that owns its
// session or task.
func (s *Service) Route(ctx context.Context, target string, a tasks.Action) (*api.TaskResponse, error) {
	if target != "" && target != s.Node {
		return s.remoteTask(ctx, target, a)
	}
	local := target == s.Node || s.Mesh() == nil || (a.Op == tasks.OpStart && (a.Command != "" || a.Launcher != ""))
	if !local && tasks.IsSessionOp(a.Op) {
		if s.Tasks.Hosts(a.Session) {
			local = true
		} else if _, err := s.Sessions.Resolve(a.Session); err == nil || !errors.Is(err, sessions.ErrUnknownSession) {
			local = true
		} else if rec, rerr := s.Record(a.Session); rerr == nil && rec.Node != s.Node {
			return s.remoteTask(ctx, rec.Node, a)
		} else {
			local = true
		}
	}
	if res, ok, err := s.Hosted.Task(a); ok {
		return res, err
	}
	res, err := s.doTask(a)
	if err == nil || local || tasks.KindOf(err) != tasks.KindNotFound {
		return res, err
	}
	// A task id this node does not know: ask the reachable peers.
	for name, up := range s.Members() {
		if name == s.Node || !up {
			continue
		}
		out, rerr := s.remoteTask(ctx, name, a)
		if status.Code(rerr) == codes.NotFound {
			continue
		}
		return out, rerr
	}
	return nil, err
}

func (s *Service) doTask(a tasks.Action) (*api.TaskResponse, error) {
	res, err := s.Tasks.Do(a)
	if err != nil {
		return nil, err
	}
	return &api.TaskResponse{Result: tasks.ResultToAPI(res), Node: s.Node}, nil
}

// remoteTask sends a to node over the cluster gRPC; the answer's status
// (and so the caller's exit code) is the target's.
func (s *Service) remoteTask(ctx context.Context, node string, a tasks.Action) (*api.TaskResponse, error) {
	if s.Mesh() == nil {
		return nil, status.Error(codes.Unimplemented, fmt.Sprintf("task: --node %s needs the mesh on; this node runs alone", node))
	}
	cl, err := s.Mesh().ClientOf(node)
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

func (s *TaskLocal) Decide(ctx context.Context, req *api.DecideRequest) (*api.DecideResponse, error) {
	if req.Query == nil {
		return nil, status.Error(codes.InvalidArgument, "decide: no query")
	}
	return s.decide(ctx, tasks.QueryFromAPI(req.Query), claims.FromAPI(req.Query.Claims)), nil
}

// decide answers a hook's question about one tool call: the task
// runtime's checks first, then the claims (unless the task refused it).
// cr are the claims the hook sent beside q.
func (s *Service) decide(ctx context.Context, q tasks.Query, cr []claims.Request) *api.DecideResponse {
	q.Wait = min(max(q.Wait, 0), maxDecideWait)
	call := callRef(q)
	if d := s.Claims(); d != nil {
		switch q.Phase {
		case tasks.PhasePre:
			d.BeginCall(q.Session, call)
		case tasks.PhasePost:
			if err := d.CallEnded(ctx, q.Session, call, q.Failed); err != nil {
				s.Log.Warn("claims: a failed write's claim was not released", "session", q.Session, "err", err)
			}
		}
	}
	v := s.Tasks.Decide(ctx, q)
	if v.Decision == tasks.DecideAllow || v.Decision == tasks.DecideNone {
		if r, ok := s.decideClaims(ctx, cr, call); ok {
			return r
		}
	} else if v.Decision == tasks.DecideDeny {
		s.claimsRefused(cr)
	}
	return &api.DecideResponse{Decision: v.Decision, Reason: v.Reason, Task: v.Task, Call: v.Call}
}

// DecideInAppend answers an Append's decide (the events are stored by
// then); the answer is bounded like a separate Decide call's.
func (s *Service) DecideInAppend(ctx context.Context, query *api.DecideQuery) *api.DecideResponse {
	q := tasks.QueryFromAPI(query)
	q.Wait = 0 // a confirmation wait needs its own Decide call (the answer is confirm)
	ctx, cancel := context.WithTimeout(ctx, appendDecideBound)
	defer cancel()
	return s.decide(ctx, q, claims.FromAPI(query.Claims))
}

func (s *TaskLocal) AwaitApproval(ctx context.Context, req *api.ApprovalRequest) (*api.ApprovalResponse, error) {
	wait := min(time.Duration(max(req.WaitMs, 0))*time.Millisecond, maxApproveWait)
	r := tasks.Request{Session: req.Session, Agent: req.Agent, Tool: req.Tool, Summary: tasks.Summarize(req.Tool, req.Input),
		Detail: tasks.Detail(req.Tool, req.Input), SessionWide: req.SessionWide,
		Key: text.Clip(req.RequestKey, presence.MaxIDLen+8), Parent: text.Clip(req.ParentSession, presence.MaxIDLen)}
	s.Facts(&r)
	cwd := req.Cwd
	if cwd == "" {
		cwd = r.Cwd // the session's
	}
	r.Facts = callfacts.Of(req.Agent, req.Tool, req.Input, cwd)
	r, ans, ok, err := s.Tasks.Approvals().Await(ctx, r, wait)
	if err != nil {
		return nil, Status(err)
	}
	if !ok {
		return &api.ApprovalResponse{Decision: "none", Request: r.ID}, nil
	}
	d := "deny"
	if ans.Allow {
		d = "allow"
	} else {
		s.releaseDeniedClaims(ctx, r.Session, approvalCallRef(req))
	}
	return &api.ApprovalResponse{Decision: d, Reason: ans.Reason, Request: r.ID, By: ans.By, SessionWide: ans.SessionWide}, nil
}

func (s *TaskLocal) Pending(ctx context.Context, req *api.PendingRequest) (*api.PendingResponse, error) {
	out := &api.PendingResponse{}
	for _, r := range s.Waiting() {
		out.Requests = append(out.Requests, tasks.RequestToAPI(r))
	}
	if req.LocalOnly || s.Mesh() == nil {
		return out, nil
	}
	for name, up := range s.Members() {
		if name == s.Node || !up {
			continue
		}
		cl, err := s.Mesh().ClientOf(name)
		if err != nil {
			out.Unreachable = append(out.Unreachable, name)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, s.OwnerReadTimeout)
		res, err := cl.Pending(rctx, &api.PendingRequest{LocalOnly: true})
		cancel()
		if err == nil {
			err = cluster.CheckPeerList("node "+name, "pending requests", len(res.Requests))
		}
		if err != nil {
			out.Unreachable = append(out.Unreachable, name)
			continue
		}
		out.Requests = append(out.Requests, res.Requests...)
	}
	return out, nil
}

func (s *TaskLocal) Answer(ctx context.Context, req *api.AnswerRequest) (*api.AnswerResponse, error) {
	by := operator.By(ctx, s.Node, req.By)
	owner, named := taskwire.RequestNode(req.Request)
	if named && owner != s.Node && !req.LocalOnly && s.Mesh() != nil {
		return s.answerAt(ctx, owner, req, by) // the id names its node: ask it alone
	}
	r, err := s.Tasks.Approvals().AnswerWith(req.Request, req.Allow, req.SessionWide, by, req.Reason)
	if err == nil || !errors.Is(err, tasks.ErrNoRequest) || req.LocalOnly || s.Mesh() == nil || named {
		if err != nil {
			return nil, Status(err)
		}
		return &api.AnswerResponse{Request: tasks.RequestToAPI(r)}, nil
	}
	// An id without its node (an older node's): ask each member in turn.
	for name, up := range s.Members() {
		if name == s.Node || !up {
			continue
		}
		cl, cerr := s.Mesh().ClientOf(name)
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
	return nil, Status(err)
}

// answerAt routes an answer to the node its request id names: that node
// alone, within taskRouteTimeout.
func (s *TaskLocal) answerAt(ctx context.Context, owner string, req *api.AnswerRequest, by string) (*api.AnswerResponse, error) {
	if !s.Members()[owner] {
		return nil, status.Error(codes.Unavailable, fmt.Sprintf("request %s: its node %s is not reachable now; answer it once the node is back", text.OneLine(req.Request), text.OneLine(owner)))
	}
	cl, err := s.Mesh().ClientOf(owner)
	if err != nil {
		return nil, status.Error(codes.Unavailable, fmt.Sprintf("request %s: node %s: %v", text.OneLine(req.Request), text.OneLine(owner), err))
	}
	rctx, cancel := context.WithTimeout(ctx, taskRouteTimeout)
	defer cancel()
	return cl.Answer(rctx, &api.AnswerRequest{Request: req.Request, Allow: req.Allow, Reason: req.Reason, LocalOnly: true,
		SessionWide: req.SessionWide, By: operator.Part(by)})
}

// ---- the cluster service ----

func (s *TaskPeer) Task(ctx context.Context, req *api.TaskRequest) (*api.TaskResponse, error) {
	a, err := tasks.ActionFromAPI(req.Action)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "task: malformed action: "+err.Error())
	}
	h := s.Tasks
	if h == nil {
		return nil, status.Error(codes.Unavailable, "task: this node hosts no task runtimes")
	}
	// A task this node does not have is not found here, whoever asks, so
	// that a caller's search goes on to the next node.
	if !tasks.IsSessionOp(a.Op) && a.Op != tasks.OpUsage {
		if _, ok := h.SessionOfTask(a.Task); !ok {
			return nil, status.Error(codes.NotFound, fmt.Sprintf("task: no task %q on node %s", a.Task, s.Node))
		}
	}
	id, err := s.Gate.Authorize(ctx, "task "+a.Op)
	if err != nil {
		return nil, Status(err)
	}
	if err := s.Gate.AuthorizeStart(id, a); err != nil {
		return nil, Status(err)
	}
	a.By = operator.Remote(a.By, id)
	if a.Harn != nil { // the node's own key, never a caller's
		o := *a.Harn
		o.Key = ""
		a.Harn = &o
	}
	if err := s.admit(id, &a); err != nil { // node/remotepolicy: provider, workdir, grants
		return nil, Status(err)
	}
	s.Log.Info("remote task action", "op", a.Op, "by", a.By, "session", text.Clip(text.OneLine(a.Session), 64),
		"task", text.Clip(text.OneLine(a.Task), 64), "launcher", text.Clip(text.OneLine(a.Launcher), 64))
	if res, ok, err := s.Hosted.Task(a); ok {
		return res, err
	}
	res, err := h.Do(a)
	if err != nil {
		return nil, Status(err)
	}
	return &api.TaskResponse{Result: tasks.ResultToAPI(res), Node: s.Node}, nil
}

// Pending lists this node's open permission requests and confirmations
// to a member. The call in full (its command, file, diff and Detail: a
// command's arguments) goes only to a caller this node's --remote-control
// policy allows, who may answer it; any other member gets the summary, as
// the gossiped trace carries it, and so still learns which session waits
// where.
func (s *TaskPeer) Pending(ctx context.Context, _ *api.PendingRequest) (*api.PendingResponse, error) {
	out := &api.PendingResponse{}
	h := s.Tasks
	if h == nil {
		return out, nil
	}
	full := s.Gate.Allowed(ctx)
	for _, r := range s.Waiting() {
		if !full {
			r = r.Summarized()
		}
		out.Requests = append(out.Requests, tasks.RequestToAPI(r))
	}
	return out, nil
}

func (s *TaskPeer) Answer(ctx context.Context, req *api.AnswerRequest) (*api.AnswerResponse, error) {
	h := s.Tasks
	if h == nil {
		return nil, status.Error(codes.NotFound, tasks.ErrNoRequest.Error())
	}
	// An unknown request is not a remote action yet: say so without
	// asking for credentials, so that a fan-out can go on.
	if !h.Approvals().Has(req.Request) {
		return nil, status.Error(codes.NotFound, fmt.Sprintf("%s %q", tasks.ErrNoRequest, req.Request))
	}
	id, err := s.Gate.Authorize(ctx, "answer")
	if err != nil {
		return nil, Status(err)
	}
	r, err := h.Approvals().AnswerWith(req.Request, req.Allow, req.SessionWide, operator.Remote(req.By, id), req.Reason)
	if err != nil {
		return nil, Status(err)
	}
	return &api.AnswerResponse{Request: tasks.RequestToAPI(r)}, nil
}

// UsageMesh sums the model-call usage of every node's ledger: this
// node's and, at once, each member's the mesh knows, each asked within
// taskRouteTimeout. A member that is down or does not answer in time is
// named in the answer's message, so that a partial sum says so. Every
// row carries the node whose ledger holds it.
func (s *Service) UsageMesh(ctx context.Context, a tasks.Action) (*api.TaskResponse, error) {
	res, err := s.Tasks.Do(a)
	if err != nil {
		return nil, Status(err)
	}
	for i := range res.Usage {
		res.Usage[i].Node = s.Node
	}
	type answer struct {
		node string
		rows []tasks.UsageRow
		err  error
	}
	var missing []string
	ch := make(chan answer)
	asked := 0
	for name, up := range s.Members() {
		if name == s.Node {
			continue
		}
		if !up {
			missing = append(missing, name+" (unreachable)")
			continue
		}
		asked++
		go func() {
			out, rerr := s.remoteTask(ctx, name, a) // bounded by taskRouteTimeout
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
			s.Log.Debug("usage: node did not answer", "node", an.node, "err", an.err)
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
	return &api.TaskResponse{Result: tasks.ResultToAPI(res), Node: s.Node}, nil
}

// maxUsageRows bounds the usage rows taken from one peer.
const maxUsageRows = 4096
