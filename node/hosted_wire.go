package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/hosted"
	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/exec"
	"github.com/harn-dev/harn/util/text"
)

// The hosting room's wiring (node/hosted): its config, its open and
// close, the hooks' tie to hosted rows (Ingest), its turn watch (a
// subscriber), the Hosted service on the local socket and its routing to
// the owner, and hosted sessions' steer and follow-up through the task
// path. The HostedPeer service and the attach relay are in
// hosted_peer.go, the local attach upgrade in hosted_attach.go.

// HarnAgent is the built-in `harn run harn`: harn's own TUI (harn chat).
const HarnAgent = "harn"

// HostedConfig configures the hosting room.
type HostedConfig struct {
	// Max caps the node's live hosted sessions (--max-hosted).
	Max int
	// RemoteWatch is the --remote-watch policy (the syntax of
	// --remote-control): who on other nodes may attach to this node's
	// hosted terminals to watch, without typing. Those --remote-control
	// allows may type too.
	RemoteWatch string
	// Grace is the SIGTERM-to-SIGKILL wait of `agents stop` (0: 10 s).
	Grace time.Duration
	// HarnBin is the harn binary `harn run harn` starts ("": the harn
	// beside this process's binary, else harn on PATH).
	HarnBin string
}

// DefaultMaxHosted is --max-hosted's default.
const DefaultMaxHosted = 8

func (c HostedConfig) validate() error {
	if c.Max < 1 {
		return fmt.Errorf("%w: --max-hosted %d: give at least 1 (default %d)", ErrConfig, c.Max, DefaultMaxHosted)
	}
	if _, err := trust.ParseRemoteControl(c.RemoteWatch); err != nil {
		return fmt.Errorf("%w: --remote-watch: %w", ErrConfig, err)
	}
	return nil
}

// RemoteWatch is this node's --remote-watch policy.
func (n *Node) RemoteWatch() trust.RemoteControl {
	rc, _ := trust.ParseRemoteControl(n.cfg.Hosted.RemoteWatch) // checked by Validate
	return rc
}

// Hosted is the hosting room (tests).
func (n *Node) Hosted() *hosted.Room { return n.hosted }

// openHosted opens the hosting room: after the ledger and the sessions
// (it records the ends of what a killed node left), before the socket.
func (n *Node) openHosted() error {
	cfg := hosted.DefaultConfig()
	cfg.Node, cfg.StateDir, cfg.Max = n.cfg.Name, filepath.Join(n.cfg.DataDir, "hosted"), n.cfg.Hosted.Max
	if n.cfg.Hosted.Grace > 0 {
		cfg.Grace = n.cfg.Hosted.Grace
	}
	cfg.Environ = os.Environ()
	cfg.Env = []string{"HARN_DATA_DIR=" + n.cfg.DataDir, "HARN_SOCKET=" + n.cfg.Socket}
	cfg.Sink = sinkFunc(func(evs []presence.Event) error { _, err := n.Ingest(evs); return err })
	if d, err := runtime.NewDigester(n.key); err == nil {
		cfg.Digest = d.Digest
	}
	cfg.OnChange = n.taskChanged
	cfg.Clock, cfg.Logger = n.cfg.Clock, n.log.With("room", "hosted")
	r, err := hosted.New(cfg)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := r.Open(); err != nil {
		return err
	}
	n.hosted = r
	return nil
}

// tieHosted ties hook events to hosted rows (hosted.Room.Tie). Events that
// claim a hosted session from outside its process tree are invalid.
func (n *Node) tieHosted(evs []presence.Event) error {
	if n.hosted == nil {
		return nil
	}
	if err := n.hosted.Tie(evs); err != nil {
		return fmt.Errorf("%w: %w", presence.ErrInvalidEvent, err)
	}
	return nil
}

// hostedView is the row's view of a hosted session of this node, nil for
// any other; peek is set while the session needs input.
func (n *Node) hostedView(st *presence.State) *api.HostedView {
	if n.hosted == nil || !strings.HasPrefix(st.SessionID, "hs-") {
		return nil
	}
	in, ok := n.hosted.Get(st.SessionID)
	if !ok {
		return nil
	}
	v := &api.HostedView{Worktree: text.Clip(in.Worktree, 240), Branch: text.Clip(in.Branch, 120), LaunchedAs: text.Clip(in.Name, 64),
		Attached: int32(min(in.Attached, 1<<20)), Queued: int32(in.Queued)}
	if st.Activity == presence.ActivityNeedsInput {
		v.Peek = n.hosted.Peek(st.SessionID)
	}
	return v
}

// hostedStatus maps the room's errors to statuses (and so exit codes).
func hostedStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	msg := err.Error()
	switch {
	case errors.Is(err, hosted.ErrTooMany):
		return apigrpc.WithReason(codes.ResourceExhausted, api.ReasonHostedFull, msg)
	case errors.Is(err, hosted.ErrNoSession), errors.Is(err, ErrUnknownSession):
		return status.Error(codes.NotFound, msg)
	case errors.Is(err, ErrAmbiguous):
		return status.Error(codes.Aborted, msg)
	case errors.Is(err, hosted.ErrBadStart), errors.Is(err, taskwire.ErrBadAction):
		return status.Error(codes.InvalidArgument, msg)
	case errors.Is(err, errNotHosted):
		return apigrpc.WithReason(codes.FailedPrecondition, reasonNotHosted, msg)
	case errors.Is(err, hosted.ErrQueueFull), errors.Is(err, hosted.ErrWorktree):
		return status.Error(codes.FailedPrecondition, msg)
	case errors.Is(err, hosted.ErrReadOnly), errors.Is(err, ErrRemoteExec), errors.Is(err, ErrRemoteRefused), errors.Is(err, trust.ErrRemoteControl),
		errors.Is(err, remotepolicy.ErrRefused):
		return status.Error(codes.PermissionDenied, msg)
	case errors.Is(err, hosted.ErrClosed):
		return status.Error(codes.Unavailable, msg)
	}
	return status.Error(codes.Internal, msg)
}

var errNotHosted = errors.New("node: not a hosted session")

// reasonNotHosted is the ErrorInfo reason of errNotHosted: `harn attach`
// then opens harn chat's TUI on the session instead.
const reasonNotHosted = "NOT_HOSTED"

// hostedSpec turns a run's agent name into what the room starts: a
// built-in agent (an adapter that hosts, or harn) or a launcher of this
// node's config. remote says the run came from another node: a launcher
// must then be in --remote-exec, and the directory inside a workspace
// root.
func (n *Node) hostedSpec(req *api.HostedRunRequest, remote bool) (hosted.Spec, error) {
	name := req.Agent
	sp := hosted.Spec{Name: name, Dir: req.Dir, Worktree: req.Worktree, Base: req.Base, By: req.By,
		Rows: uint16(min(req.Rows, 500)), Cols: uint16(min(req.Cols, 1000)), Busy: req.Prompt != ""}
	if len(req.Prompt) > hosted.MaxText {
		return sp, fmt.Errorf("%w: the prompt is %d bytes; at most %d", hosted.ErrBadStart, len(req.Prompt), hosted.MaxText)
	}
	launcher, isLauncher := n.cfg.Launchers[name]
	hs, isAgent := all.Host(name)
	switch {
	case name == HarnAgent:
		bin, err := n.harnBin()
		if err != nil {
			return sp, err
		}
		sp.Agent, sp.Argv, sp.TypePrompt, sp.Busy = HarnAgent, []string{bin, "chat"}, req.Prompt, false
		sp.Interrupt, sp.Submit = adapter.Escape, adapter.Enter
	case isAgent:
		sp.Agent, sp.Argv, sp.Interrupt, sp.Submit, sp.DropEnv = name, hs.Args(req.Prompt), hs.Interrupt, hs.Submit, hs.DropEnv
	case isLauncher:
		if remote && !slices.Contains(n.cfg.Cluster.RemoteExec, name) {
			list := strings.Join(n.cfg.Cluster.RemoteExec, ",")
			if list == "" {
				list = "none"
			}
			return sp, fmt.Errorf("%w by node %s: launcher %q is not in its --remote-exec (%s)", ErrRemoteExec, n.cfg.Name, text.Clip(text.OneLine(name), 64), list)
		}
		sp.Agent, sp.Argv = name, slices.Clone(launcher)
		if req.Prompt != "" {
			sp.Argv = append(sp.Argv, req.Prompt)
		}
		sp.Interrupt, sp.Submit = adapter.Escape, adapter.Enter
		// A launcher that runs an agent harn knows takes its keys.
		for _, a := range all.Hostable() {
			if h, _ := all.Host(a); h.Binary == filepath.Base(launcher[0]) {
				sp.Agent, sp.Interrupt, sp.Submit, sp.DropEnv = a, h.Interrupt, h.Submit, h.DropEnv
			}
		}
	default:
		names := append(all.Hostable(), HarnAgent)
		for l := range n.cfg.Launchers {
			names = append(names, l)
		}
		slices.Sort(names)
		return sp, fmt.Errorf("%w: no agent or launcher %q on node %s; give one of %s", hosted.ErrBadStart,
			text.Clip(text.OneLine(name), 64), n.cfg.Name, strings.Join(names, ", "))
	}
	if remote {
		// The same rule as harn's own sessions from another node: inside
		// a --workspace root, never the data dir or a secret file's place
		// (node/remotepolicy); no --dir is the first root.
		dir, err := n.policy().Workdir(sp.Dir)
		if err != nil {
			return sp, err
		}
		sp.Dir = dir
	}
	return sp, nil
}

// policy is the node's remote policy (set at Open; computed before).
func (n *Node) policy() remotepolicy.Config {
	if n.remotePol.Node != "" {
		return n.remotePol
	}
	return n.remotePolicy()
}

// harnBin is the harn binary `harn run harn` starts.
func (n *Node) harnBin() (string, error) {
	if b := n.cfg.Hosted.HarnBin; b != "" {
		return b, nil
	}
	if self, err := os.Executable(); err == nil {
		if b := filepath.Join(filepath.Dir(self), "harn"); b != self {
			if fi, err := os.Stat(b); err == nil && !fi.IsDir() {
				return b, nil
			}
		}
	}
	return "harn", nil
}

// runHosted starts a hosted session here; remote says a peer asked.
func (n *Node) runHosted(req *api.HostedRunRequest, remote bool) (*api.HostedRunResponse, error) {
	if n.hosted == nil {
		return nil, hostedStatus(hosted.ErrClosed)
	}
	sp, err := n.hostedSpec(req, remote)
	if err != nil {
		return nil, hostedStatus(err)
	}
	in, err := n.hosted.Start(sp)
	if err != nil {
		return nil, hostedStatus(err)
	}
	return &api.HostedRunResponse{Session: in.ID, Node: n.cfg.Name, Worktree: in.Worktree, Branch: in.Branch, Dir: in.Dir,
		Pid: int64(in.PID), Agent: sp.Agent}, nil
}

// actHosted acts on hosted session id of this node.
func (n *Node) actHosted(id, op, t, by string) (*api.HostedActResponse, error) {
	if n.hosted == nil || !n.hosted.Has(id) {
		return nil, hostedStatus(fmt.Errorf("%w: session %s on node %s is not a live hosted session (started with harn run); its agent takes no input from harn", errNotHosted, id, n.cfg.Name))
	}
	var res hosted.Result
	var err error
	switch op {
	case "steer":
		res, err = n.hosted.Steer(id, t, by)
	case "follow_up":
		res, err = n.hosted.FollowUp(id, t, by)
	case "interrupt":
		res, err = n.hosted.Interrupt(id, by)
	case "stop":
		res, err = n.hosted.Stop(id, by)
	default:
		err = fmt.Errorf("%w: unknown op %q; use steer, follow_up, interrupt or stop", hosted.ErrBadStart, text.Clip(text.OneLine(op), 32))
	}
	if err != nil {
		return nil, hostedStatus(err)
	}
	n.log.Info("hosted action", "op", op, "session", id, "by", by)
	return &api.HostedActResponse{Session: id, Node: n.cfg.Name, Mode: res.Mode, Queued: int32(res.Queued), Message: res.Message}, nil
}

// placeHosted finds where a session handle lives: this node's own first,
// then the registry, then what peers gossip (a session started a moment
// ago may not be in this node's replica yet).
func (n *Node) placeHosted(handle string) (id, node string, err error) {
	st, err := n.resolveLocal(handle)
	if err == nil {
		return st.SessionID, n.cfg.Name, nil
	}
	if !errors.Is(err, ErrUnknownSession) || n.cl == nil {
		return "", "", err
	}
	if rec, rerr := n.resolveRecord(handle); rerr == nil {
		return rec.SessionID, rec.Node, nil
	} else if !errors.Is(rerr, ErrUnknownSession) {
		return "", "", rerr
	}
	var found []string
	var where string
	for _, ne := range n.remote.All() {
		sid := ne.Entry.GetSessionId()
		if sid == handle {
			return sid, ne.Node, nil
		}
		if strings.HasPrefix(sid, handle) || strings.EqualFold(ne.Entry.GetName(), handle) {
			found, where = append(found, sid), ne.Node
		}
	}
	if len(found) == 1 {
		return found[0], where, nil
	}
	if len(found) > 1 {
		return "", "", fmt.Errorf("%w: %q names %d sessions (%s)", ErrAmbiguous, handle, len(found), strings.Join(found[:min(len(found), 5)], ", "))
	}
	return "", "", err
}

// hostedService is the Hosted service on the local socket.
type hostedService struct {
	n *Node
}

func (s *hostedService) Run(ctx context.Context, req *api.HostedRunRequest) (*api.HostedRunResponse, error) {
	return s.n.hostedRun(ctx, req, s.n.operatorBy(ctx, ""))
}

// hostedRun starts a hosted session here or on req.Node, for by.
func (n *Node) hostedRun(ctx context.Context, req *api.HostedRunRequest, by string) (*api.HostedRunResponse, error) {
	req.By = by
	if req.Node != "" && req.Node != n.cfg.Name {
		cl, err := n.hostedPeerOf(req.Node)
		if err != nil {
			return nil, err
		}
		r := cloneRun(req)
		r.By = operatorPart(req.By)
		rctx, cancel := context.WithTimeout(ctx, taskRouteTimeout)
		defer cancel()
		return peerAnswer(cl.Run(rctx, r))
	}
	if req.Dir == "" {
		return nil, hostedStatus(fmt.Errorf("%w: name the directory (--dir DIR)", hosted.ErrBadStart))
	}
	return n.runHosted(req, false)
}

func cloneRun(r *api.HostedRunRequest) *api.HostedRunRequest {
	return &api.HostedRunRequest{Agent: r.Agent, Node: r.Node, Dir: r.Dir, Worktree: r.Worktree, Base: r.Base,
		Prompt: r.Prompt, Rows: r.Rows, Cols: r.Cols, By: r.By}
}

func (s *hostedService) Act(ctx context.Context, req *api.HostedActRequest) (*api.HostedActResponse, error) {
	return s.n.hostedAct(ctx, req, s.n.operatorBy(ctx, ""))
}

// hostedAct acts on a hosted session here or on its owner, for by.
func (n *Node) hostedAct(ctx context.Context, req *api.HostedActRequest, by string) (*api.HostedActResponse, error) {
	target, id := req.Node, req.Session
	if target == "" || target == n.cfg.Name {
		var err error
		if id, target, err = n.placeHosted(req.Session); err != nil {
			return nil, hostedStatus(err)
		}
	}
	if target == n.cfg.Name {
		return n.actHosted(id, req.Op, req.Text, by)
	}
	cl, err := n.hostedPeerOf(target)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, taskRouteTimeout)
	defer cancel()
	return peerAnswer(cl.Act(rctx, &api.HostedActRequest{Session: id, Node: target, Op: req.Op, Text: req.Text, By: operatorPart(by)}))
}

func (s *hostedService) Screen(ctx context.Context, req *api.HostedScreenRequest) (*api.HostedScreenResponse, error) {
	return s.n.hostedScreen(ctx, req)
}

// hostedScreen reads a hosted terminal's screen, here or from its owner.
func (n *Node) hostedScreen(ctx context.Context, req *api.HostedScreenRequest) (*api.HostedScreenResponse, error) {
	target, id := req.Node, req.Session
	if target == "" || target == n.cfg.Name {
		var err error
		if id, target, err = n.placeHosted(req.Session); err != nil {
			return nil, hostedStatus(err)
		}
	}
	if target == n.cfg.Name {
		return n.screenHosted(id)
	}
	cl, err := n.hostedPeerOf(target)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, taskRouteTimeout)
	defer cancel()
	return peerAnswer(cl.Screen(rctx, &api.HostedScreenRequest{Session: id, Node: target}))
}

// screenHosted is the screen of hosted session id of this node.
func (n *Node) screenHosted(id string) (*api.HostedScreenResponse, error) {
	if n.hosted == nil {
		return nil, hostedStatus(hosted.ErrClosed)
	}
	lines, ok := n.hosted.Screen(id)
	if !ok {
		return nil, hostedStatus(fmt.Errorf("%w: session %s on node %s is not a live hosted session", errNotHosted, id, n.cfg.Name))
	}
	return &api.HostedScreenResponse{Session: id, Node: n.cfg.Name, Lines: lines}, nil
}

func (s *hostedService) Worktrees(ctx context.Context, req *api.WorktreesRequest) (*api.WorktreesResponse, error) {
	n := s.n
	if req.Node != "" && req.Node != n.cfg.Name {
		cl, err := n.hostedPeerOf(req.Node)
		if err != nil {
			return nil, err
		}
		rctx, cancel := context.WithTimeout(ctx, taskRouteTimeout)
		defer cancel()
		return peerAnswer(cl.Worktrees(rctx, &api.WorktreesRequest{Node: req.Node, Remove: req.Remove, Force: req.Force,
			By: operatorPart(n.operatorBy(ctx, ""))}))
	}
	return n.worktrees(req)
}

// worktrees lists or removes this node's worktrees.
func (n *Node) worktrees(req *api.WorktreesRequest) (*api.WorktreesResponse, error) {
	if n.hosted == nil {
		return nil, hostedStatus(hosted.ErrClosed)
	}
	out := &api.WorktreesResponse{Node: n.cfg.Name}
	if req.Remove != "" {
		msg, err := n.hosted.RemoveWorktree(req.Remove, req.Force)
		if err != nil {
			return nil, hostedStatus(err)
		}
		n.log.Info("hosted worktree removed", "which", req.Remove, "force", req.Force, "by", req.By)
		out.Message = msg
		return out, nil
	}
	for _, w := range n.hosted.Worktrees() {
		out.Worktrees = append(out.Worktrees, &api.HostedWorktree{Path: w.Path, Branch: w.Branch, Base: w.Base, Repo: w.Repo,
			Session: w.Session, Live: w.Live, Clean: w.Clean, Unpushed: int32(w.Unpushed), Node: n.cfg.Name,
			CreatedUnixNano: w.Created.UnixNano(), Error: w.Error})
	}
	return out, nil
}

// peerAnswer passes a peer's answer on; a peer that did not answer is
// named as unreachable.
func peerAnswer[T any](res T, err error) (T, error) {
	if err != nil {
		if st, ok := status.FromError(err); ok && (st.Code() == codes.Unavailable || st.Code() == codes.DeadlineExceeded) {
			var zero T
			return zero, apigrpc.WithReason(codes.Unavailable, api.ReasonOwnerUnreachable, "hosted: the node did not answer: "+st.Message())
		}
	}
	return res, err
}

// hostedTask runs a task path's steer or follow-up on a hosted session of
// this node: typed into its terminal (steer now, follow-up at its turn's
// stop). ok is false for any other action or session.
func (n *Node) hostedTask(a tasks.Action) (res *api.TaskResponse, ok bool, err error) {
	if n.hosted == nil || (a.Op != tasks.OpSteer && a.Op != tasks.OpFollowUp) || a.Session == "" {
		return nil, false, nil
	}
	st, rerr := n.resolveLocal(a.Session)
	if rerr != nil || !n.hosted.Has(st.SessionID) {
		return nil, false, nil
	}
	op := "steer"
	if a.Op == tasks.OpFollowUp {
		op = "follow_up"
	}
	by := a.By
	if by == "" {
		by = "operator@" + n.cfg.Name
	}
	out, err := n.actHosted(st.SessionID, op, a.Text, by)
	if err != nil {
		return nil, true, err
	}
	mode := exec.SteerDelivered
	if out.Mode == "queued" {
		mode = exec.SteerFollowUp
	}
	r := tasks.Result{Node: n.cfg.Name, Session: st.SessionID, Message: out.Message,
		Steer: &exec.SteerResult{Mode: mode, Message: out.Message}}
	return &api.TaskResponse{Result: tasks.ResultToAPI(r), Node: n.cfg.Name}, true, nil
}
