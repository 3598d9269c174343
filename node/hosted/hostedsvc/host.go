package hostedsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/hosted"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/exec"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/text"
)

// The Host's part: the hooks' tie to hosted rows, a row's view, each
// start's spec (an adapter's Hoster role, harn, or a launcher; the remote
// rules), the actions, the placement of a handle, the Hosted service on
// the local socket and its routing to the owner, and hosted sessions'
// steer and follow-up through the task path. The HostedPeer service and
// the attach pump are in peer.go, the local attach upgrade in attach.go.

// HarnAgent is the built-in `harn run harn`: harn's own TUI (harn chat).
const HarnAgent = "harn"

// RouteTimeout bounds one routed call to the owner.
const RouteTimeout = 10 * time.Second

// Config configures the hosting room (the node's flags).
type Config struct {
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

// DefaultMax is --max-hosted's default.
const DefaultMax = 8

// Validate checks the flags.
func (c Config) Validate() error {
	if c.Max < 1 {
		return fmt.Errorf("%w: --max-hosted %d: give at least 1 (default %d)", layout.ErrConfig, c.Max, DefaultMax)
	}
	if _, err := trust.ParseRemoteControl(c.RemoteWatch); err != nil {
		return fmt.Errorf("%w: --remote-watch: %w", layout.ErrConfig, err)
	}
	return nil
}

// Sessions is what the Host reads of this node's sessions.
type Sessions interface {
	Resolve(handle string) (presence.State, error)
}

// Mesh is what the Host needs of the mesh.
type Mesh interface {
	Conn(node string) (*grpc.ClientConn, error)
}

// Deps wires a Host to the rest of the node.
type Deps struct {
	Node      string
	DataDir   string
	Socket    string
	Key       []byte
	Launchers map[string][]string
	Sink      hosted.Sink
	OnChange  func(session string)
	Clock     clock.Clock
	Log       *slog.Logger
	Gate      *operator.Gate
	// Policy is the node's policy for callers on other nodes.
	Policy   func() remotepolicy.Config
	Sessions Sessions
	// Mesh is the mesh, nil without it; Record resolves a handle in the
	// registry and Gossip holds what other nodes gossip (with the mesh).
	Mesh      func() Mesh
	Record    func(handle string) (raftstore.Record, error)
	Gossip    *gossip.Table
	Reachable func() []string
	// Stop closes when the node stops (attaches end).
	Stop <-chan struct{}
}

// Host is the hosting room's service: it owns the room (node/hosted).
type Host struct {
	Deps
	cfg  Config
	room *hosted.Room
}

// Open opens the hosting room: after the ledger and the sessions (it
// records the ends of what a killed node left), before the socket.
func Open(c Config, d Deps) (*Host, error) {
	cfg := hosted.DefaultConfig()
	cfg.Node, cfg.StateDir, cfg.Max = d.Node, filepath.Join(d.DataDir, "hosted"), c.Max
	if c.Grace > 0 {
		cfg.Grace = c.Grace
	}
	cfg.Environ = os.Environ()
	cfg.Env = []string{"HARN_DATA_DIR=" + d.DataDir, "HARN_SOCKET=" + d.Socket}
	cfg.Sink = d.Sink
	if dg, err := runtime.NewDigester(d.Key); err == nil {
		cfg.Digest = dg.Digest
	}
	cfg.OnChange = d.OnChange
	cfg.Clock, cfg.Logger = d.Clock, d.Log.With("room", "hosted")
	r, err := hosted.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", layout.ErrConfig, err)
	}
	if err := r.Open(); err != nil {
		return nil, err
	}
	return &Host{Deps: d, cfg: c, room: r}, nil
}

// Room is the hosting room (tests); nil on a nil Host.
func (h *Host) Room() *hosted.Room {
	if h == nil {
		return nil
	}
	return h.room
}

// Close closes the room: its processes end (SIGTERM, then SIGKILL).
func (h *Host) Close() {
	if h != nil {
		h.room.Close()
	}
}

// Observe tells the room of stored events: a hosted agent's turn ending
// types its held follow-up.
func (h *Host) Observe(evs []presence.Event) {
	if h != nil {
		h.room.Observe(evs)
	}
}

// Tie ties hook events to hosted rows (hosted.Room.Tie). Events that
// claim a hosted session from outside its process tree are invalid.
func (h *Host) Tie(evs []presence.Event) error {
	if h == nil {
		return nil
	}
	if err := h.room.Tie(evs); err != nil {
		return fmt.Errorf("%w: %w", presence.ErrInvalidEvent, err)
	}
	return nil
}

// View is the row's view of a hosted session of this node, nil for
// any other; peek is set while the session needs input.
func (h *Host) View(st *presence.State) *api.HostedView {
	if h == nil || !strings.HasPrefix(st.SessionID, "hs-") {
		return nil
	}
	in, ok := h.room.Get(st.SessionID)
	if !ok {
		return nil
	}
	v := &api.HostedView{Worktree: text.Clip(in.Worktree, 240), Branch: text.Clip(in.Branch, 120), LaunchedAs: text.Clip(in.Name, 64),
		Attached: int32(min(in.Attached, 1<<20)), Queued: int32(in.Queued)}
	if st.Activity == presence.ActivityNeedsInput {
		v.Peek = h.room.Peek(st.SessionID)
	}
	return v
}

// Status maps the room's errors to statuses (and so exit codes).
func Status(err error) error {
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
	case errors.Is(err, hosted.ErrNoSession), errors.Is(err, sessions.ErrUnknownSession):
		return status.Error(codes.NotFound, msg)
	case errors.Is(err, sessions.ErrAmbiguous):
		return status.Error(codes.Aborted, msg)
	case errors.Is(err, hosted.ErrBadStart), errors.Is(err, taskwire.ErrBadAction):
		return status.Error(codes.InvalidArgument, msg)
	case errors.Is(err, errNotHosted):
		return apigrpc.WithReason(codes.FailedPrecondition, reasonNotHosted, msg)
	case errors.Is(err, hosted.ErrQueueFull), errors.Is(err, hosted.ErrWorktree):
		return status.Error(codes.FailedPrecondition, msg)
	case errors.Is(err, hosted.ErrReadOnly), errors.Is(err, operator.ErrRemoteExec), errors.Is(err, operator.ErrRemoteRefused), errors.Is(err, trust.ErrRemoteControl),
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

// Spec turns a run's agent name into what the room starts: a
// built-in agent (an adapter that hosts, or harn) or a launcher of this
// node's config. remote says the run came from another node: a launcher
// must then be in --remote-exec, and the directory inside a workspace
// root.
func (h *Host) Spec(req *api.HostedRunRequest, remote bool) (hosted.Spec, error) {
	name := req.Agent
	sp := hosted.Spec{Name: name, Dir: req.Dir, Worktree: req.Worktree, Base: req.Base, By: req.By,
		Rows: uint16(min(req.Rows, 500)), Cols: uint16(min(req.Cols, 1000)), Busy: req.Prompt != ""}
	if len(req.Prompt) > hosted.MaxText {
		return sp, fmt.Errorf("%w: the prompt is %d bytes; at most %d", hosted.ErrBadStart, len(req.Prompt), hosted.MaxText)
	}
	launcher, isLauncher := h.Launchers[name]
	hs, isAgent := all.Host(name)
	switch {
	case name == HarnAgent:
		bin, err := h.harnBin()
		if err != nil {
			return sp, err
		}
		sp.Agent, sp.Argv, sp.TypePrompt, sp.Busy = HarnAgent, []string{bin, "chat"}, req.Prompt, false
		sp.Interrupt, sp.Submit = adapter.Escape, adapter.Enter
	case isAgent:
		sp.Agent, sp.Argv, sp.Interrupt, sp.Submit, sp.DropEnv = name, hs.Args(req.Prompt), hs.Interrupt, hs.Submit, hs.DropEnv
	case isLauncher:
		if remote {
			if err := h.Gate.Launcher(name, "a remote hosted run"); err != nil {
				return sp, err
			}
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
		for l := range h.Launchers {
			names = append(names, l)
		}
		slices.Sort(names)
		return sp, fmt.Errorf("%w: no agent or launcher %q on node %s; give one of %s", hosted.ErrBadStart,
			text.Clip(text.OneLine(name), 64), h.Node, strings.Join(names, ", "))
	}
	if remote {
		// The same rule as harn's own sessions from another node: inside
		// a --workspace root, never the data dir or a secret file's place
		// (node/remotepolicy); no --dir is the first root.
		dir, err := h.Policy().Workdir(sp.Dir)
		if err != nil {
			return sp, err
		}
		sp.Dir = dir
	}
	return sp, nil
}

// harnBin is the harn binary `harn run harn` starts.
func (h *Host) harnBin() (string, error) {
	if b := h.cfg.HarnBin; b != "" {
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

// Start starts a hosted session here; remote says a peer asked.
func (h *Host) Start(req *api.HostedRunRequest, remote bool) (*api.HostedRunResponse, error) {
	if h == nil {
		return nil, Status(hosted.ErrClosed)
	}
	sp, err := h.Spec(req, remote)
	if err != nil {
		return nil, Status(err)
	}
	in, err := h.room.Start(sp)
	if err != nil {
		return nil, Status(err)
	}
	return &api.HostedRunResponse{Session: in.ID, Node: h.Node, Worktree: in.Worktree, Branch: in.Branch, Dir: in.Dir,
		Pid: int64(in.PID), Agent: sp.Agent}, nil
}

// actHosted acts on hosted session id of this node.
func (h *Host) actHosted(id, op, t, by string) (*api.HostedActResponse, error) {
	if h == nil || !h.room.Has(id) {
		return nil, Status(fmt.Errorf("%w: session %s on node %s is not a live hosted session (started with harn run); its agent takes no input from harn", errNotHosted, id, h.Node))
	}
	var res hosted.Result
	var err error
	switch op {
	case "steer":
		res, err = h.room.Steer(id, t, by)
	case "follow_up":
		res, err = h.room.FollowUp(id, t, by)
	case "interrupt":
		res, err = h.room.Interrupt(id, by)
	case "stop":
		res, err = h.room.Stop(id, by)
	default:
		err = fmt.Errorf("%w: unknown op %q; use steer, follow_up, interrupt or stop", hosted.ErrBadStart, text.Clip(text.OneLine(op), 32))
	}
	if err != nil {
		return nil, Status(err)
	}
	h.Log.Info("hosted action", "op", op, "session", id, "by", by)
	return &api.HostedActResponse{Session: id, Node: h.Node, Mode: res.Mode, Queued: int32(res.Queued), Message: res.Message}, nil
}

// Place finds where a session handle lives: this node's own first,
// then the registry, then what peers gossip (a session started a moment
// ago may not be in this node's replica yet).
func (h *Host) Place(handle string) (id, node string, err error) {
	st, err := h.Sessions.Resolve(handle)
	if err == nil {
		return st.SessionID, h.Node, nil
	}
	if !errors.Is(err, sessions.ErrUnknownSession) || h.Mesh() == nil {
		return "", "", err
	}
	if rec, rerr := h.Record(handle); rerr == nil {
		return rec.SessionID, rec.Node, nil
	} else if !errors.Is(rerr, sessions.ErrUnknownSession) {
		return "", "", rerr
	}
	var found []string
	var where string
	for _, ne := range h.Gossip.All() {
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
		return "", "", fmt.Errorf("%w: %q names %d sessions (%s)", sessions.ErrAmbiguous, handle, len(found), strings.Join(found[:min(len(found), 5)], ", "))
	}
	return "", "", err
}

// hostedService is the Hosted service on the local socket.
type hostedService struct {
	h *Host
}

// Local is the Hosted service on the local socket.
func (h *Host) Local() api.HostedServer { return &hostedService{h: h} }

func (s *hostedService) Run(ctx context.Context, req *api.HostedRunRequest) (*api.HostedRunResponse, error) {
	return s.h.hostedRun(ctx, req, operator.By(ctx, s.h.Node, ""))
}

// hostedRun starts a hosted session here or on req.Node, for by.
func (h *Host) hostedRun(ctx context.Context, req *api.HostedRunRequest, by string) (*api.HostedRunResponse, error) {
	req.By = by
	if req.Node != "" && req.Node != h.Node {
		cl, err := h.hostedPeerOf(req.Node)
		if err != nil {
			return nil, err
		}
		r := cloneRun(req)
		r.By = operator.Part(req.By)
		rctx, cancel := context.WithTimeout(ctx, RouteTimeout)
		defer cancel()
		return peerAnswer(cl.Run(rctx, r))
	}
	if req.Dir == "" {
		return nil, Status(fmt.Errorf("%w: name the directory (--dir DIR)", hosted.ErrBadStart))
	}
	return h.Start(req, false)
}

func cloneRun(r *api.HostedRunRequest) *api.HostedRunRequest {
	return &api.HostedRunRequest{Agent: r.Agent, Node: r.Node, Dir: r.Dir, Worktree: r.Worktree, Base: r.Base,
		Prompt: r.Prompt, Rows: r.Rows, Cols: r.Cols, By: r.By}
}

func (s *hostedService) Act(ctx context.Context, req *api.HostedActRequest) (*api.HostedActResponse, error) {
	return s.h.hostedAct(ctx, req, operator.By(ctx, s.h.Node, ""))
}

// hostedAct acts on a hosted session here or on its owner, for by.
func (h *Host) hostedAct(ctx context.Context, req *api.HostedActRequest, by string) (*api.HostedActResponse, error) {
	target, id := req.Node, req.Session
	if target == "" || target == h.Node {
		var err error
		if id, target, err = h.Place(req.Session); err != nil {
			return nil, Status(err)
		}
	}
	if target == h.Node {
		return h.actHosted(id, req.Op, req.Text, by)
	}
	cl, err := h.hostedPeerOf(target)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, RouteTimeout)
	defer cancel()
	return peerAnswer(cl.Act(rctx, &api.HostedActRequest{Session: id, Node: target, Op: req.Op, Text: req.Text, By: operator.Part(by)}))
}

func (s *hostedService) Screen(ctx context.Context, req *api.HostedScreenRequest) (*api.HostedScreenResponse, error) {
	return s.h.hostedScreen(ctx, req)
}

// hostedScreen reads a hosted terminal's screen, here or from its owner.
func (h *Host) hostedScreen(ctx context.Context, req *api.HostedScreenRequest) (*api.HostedScreenResponse, error) {
	target, id := req.Node, req.Session
	if target == "" || target == h.Node {
		var err error
		if id, target, err = h.Place(req.Session); err != nil {
			return nil, Status(err)
		}
	}
	if target == h.Node {
		return h.screenHosted(id)
	}
	cl, err := h.hostedPeerOf(target)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, RouteTimeout)
	defer cancel()
	return peerAnswer(cl.Screen(rctx, &api.HostedScreenRequest{Session: id, Node: target}))
}

// screenHosted is the screen of hosted session id of this node.
func (h *Host) screenHosted(id string) (*api.HostedScreenResponse, error) {
	if h == nil {
		return nil, Status(hosted.ErrClosed)
	}
	lines, ok := h.room.Screen(id)
	if !ok {
		return nil, Status(fmt.Errorf("%w: session %s on node %s is not a live hosted session", errNotHosted, id, h.Node))
	}
	return &api.HostedScreenResponse{Session: id, Node: h.Node, Lines: lines}, nil
}

func (s *hostedService) Worktrees(ctx context.Context, req *api.WorktreesRequest) (*api.WorktreesResponse, error) {
	h := s.h
	if req.Node != "" && req.Node != h.Node {
		cl, err := h.hostedPeerOf(req.Node)
		if err != nil {
			return nil, err
		}
		rctx, cancel := context.WithTimeout(ctx, RouteTimeout)
		defer cancel()
		return peerAnswer(cl.Worktrees(rctx, &api.WorktreesRequest{Node: req.Node, Remove: req.Remove, Force: req.Force,
			By: operator.Part(operator.By(ctx, h.Node, ""))}))
	}
	return h.worktrees(req)
}

// worktrees lists or removes this node's worktrees.
func (h *Host) worktrees(req *api.WorktreesRequest) (*api.WorktreesResponse, error) {
	if h == nil {
		return nil, Status(hosted.ErrClosed)
	}
	out := &api.WorktreesResponse{Node: h.Node}
	if req.Remove != "" {
		msg, err := h.room.RemoveWorktree(req.Remove, req.Force)
		if err != nil {
			return nil, Status(err)
		}
		h.Log.Info("hosted worktree removed", "which", req.Remove, "force", req.Force, "by", req.By)
		out.Message = msg
		return out, nil
	}
	for _, w := range h.room.Worktrees() {
		out.Worktrees = append(out.Worktrees, &api.HostedWorktree{Path: w.Path, Branch: w.Branch, Base: w.Base, Repo: w.Repo,
			Session: w.Session, Live: w.Live, Clean: w.Clean, Unpushed: int32(w.Unpushed), Node: h.Node,
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

// Task runs a task path's steer or follow-up on a hosted session of
// this node: typed into its terminal (steer now, follow-up at its turn's
// stop). ok is false for any other action or session.
func (h *Host) Task(a tasks.Action) (res *api.TaskResponse, ok bool, err error) {
	if h == nil || (a.Op != tasks.OpSteer && a.Op != tasks.OpFollowUp) || a.Session == "" {
		return nil, false, nil
	}
	st, rerr := h.Sessions.Resolve(a.Session)
	if rerr != nil || !h.room.Has(st.SessionID) {
		return nil, false, nil
	}
	op := "steer"
	if a.Op == tasks.OpFollowUp {
		op = "follow_up"
	}
	by := a.By
	if by == "" {
		by = "operator@" + h.Node
	}
	out, err := h.actHosted(st.SessionID, op, a.Text, by)
	if err != nil {
		return nil, true, err
	}
	mode := exec.SteerDelivered
	if out.Mode == "queued" {
		mode = exec.SteerFollowUp
	}
	r := tasks.Result{Node: h.Node, Session: st.SessionID, Message: out.Message,
		Steer: &exec.SteerResult{Mode: mode, Message: out.Message}}
	return &api.TaskResponse{Result: tasks.ResultToAPI(r), Node: h.Node}, true, nil
}
