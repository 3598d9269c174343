// Package coordsvc is the coordination room: the write claims' service
// (node/claims: the room's opening on the registry, its rows, its
// holders' names) and the Coord calls (release, claims, check; end and
// ping, routed to the session's owner), and a harn session's context
// report. It reads the rest of the node through the interfaces and funcs
// of Deps, declared here.
package coordsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/tasksvc"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
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

// Procs tells whether an agent process still exists.
type Procs interface {
	Alive(pid int, start uint64) bool
}

// Deps wires the service to the rest of the node.
type Deps struct {
	Node  string
	Log   *slog.Logger
	Clock clock.Clock
	// Mode is --claims.
	Mode  string
	Gate  *operator.Gate
	Tasks *tasks.Host
	Procs Procs
	// Sessions are this node's sessions; Ingest records events of them.
	Sessions Sessions
	Ingest   func([]presence.Event) error
	// Mesh is the mesh, nil without it; Record resolves a handle in the
	// registry (with the mesh); Members are the mesh's members, each
	// with whether it is reachable.
	Mesh    func() Mesh
	Record  func(handle string) (raftstore.Record, error)
	Members func() map[string]bool
	// Claims is the claims room, nil until OpenClaims; Journal keeps
	// its pending claims.
	Claims   func() *claims.Decider
	Journal  claims.Journal
	Diagnose func(ledger.Diagnostic)
}

// Service is the coordination service.
type Service struct{ Deps }

// New builds the service. It does no I/O.
func New(d Deps) *Service { return &Service{Deps: d} }

// CoordLocal is the service's part of the Local service on the local socket.
type CoordLocal struct{ *Service }

// CoordPeer is the service's part of the cluster gRPC's peer service.
type CoordPeer struct{ *Service }

// Local is the service's part of the local socket.
func (s *Service) Local() *CoordLocal { return &CoordLocal{s} }

// Peer is the service's part of the cluster gRPC.
func (s *Service) Peer() *CoordPeer { return &CoordPeer{s} }

// Coordination actions (the Coord RPC's op), in wire.
const (
	CoordRelease = wire.CoordRelease
	CoordClaims  = wire.CoordClaims
	CoordCheck   = wire.CoordCheck
	CoordEnd     = wire.CoordEnd
	CoordPing    = wire.CoordPing
)

// ReasonOperator is wire.ReasonOperator.
const ReasonOperator = wire.ReasonOperator

// Bounds of the coordination paths.
const (
	// coordRouteTimeout bounds a routed end.
	coordRouteTimeout = 5 * time.Second
	// pingTimeout bounds a routed ping: the answer comes within a second.
	pingTimeout = 800 * time.Millisecond
	// maxReasonLen bounds an end's reason.
	maxReasonLen = 200
)

// The Coord RPC's body and result, in wire.
type (
	CoordBody   = wire.CoordBody
	CoordResult = wire.CoordResult
)

// ErrNoClaims: the node keeps no claims (claims are off).
var ErrNoClaims = errors.New("node: claims are off on this node")

func (s *CoordLocal) Coord(ctx context.Context, req *api.CoordRequest) (*api.CoordResponse, error) {
	b := BodyOf(req)
	if b.Session == "" && req.Op != CoordCheck {
		return nil, status.Error(codes.InvalidArgument, "coord: name the session (--session ID)")
	}
	var (
		res CoordResult
		err error
	)
	switch req.Op {
	case CoordRelease, CoordClaims, CoordCheck:
		res, err = s.claimsOp(ctx, req.Op, b)
	case CoordEnd, CoordPing:
		b.By = operator.By(ctx, s.Node, b.By)
		return s.routeCoord(ctx, req.Op, b)
	default:
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("coord: unknown op %q: use release, claims, check, end or ping", req.Op))
	}
	if errors.Is(err, ErrNoClaims) {
		return nil, status.Error(codes.FailedPrecondition, err.Error()+" (--claims off)")
	}
	if errors.Is(err, meshtrust.ErrTrust) { // the leader's write authority refused a release
		return nil, apigrpc.WithReason(codes.PermissionDenied, api.ReasonWriteRefused, err.Error())
	}
	if err != nil {
		return nil, tasksvc.Status(err)
	}
	return coordResponse(res, s.Node)
}

func coordResponse(res CoordResult, node string) (*api.CoordResponse, error) {
	return &api.CoordResponse{Result: ResultToAPI(res), Node: node}, nil
}

// claimSession resolves a handle for the claim ops: a session of this
// node, a registry record, or (for a session the node never saw, whose
// claims outlive its record) the id as given.
func (s *Service) claimSession(handle string) (string, error) {
	st, err := s.Sessions.Resolve(handle)
	if err == nil {
		return st.SessionID, nil
	}
	if !errors.Is(err, sessions.ErrUnknownSession) {
		return "", err
	}
	if s.Mesh() != nil {
		rec, rerr := s.Record(handle)
		if rerr == nil {
			return rec.SessionID, nil
		}
		if !errors.Is(rerr, sessions.ErrUnknownSession) {
			return "", rerr
		}
	}
	return handle, nil
}

// coordClaims runs release, claims and check against the claims room.
func (s *Service) claimsOp(ctx context.Context, op string, b CoordBody) (CoordResult, error) {
	d := s.Claims()
	if d == nil {
		return CoordResult{}, ErrNoClaims
	}
	id := b.Session // "" for check: a commit outside any session
	if id != "" {
		var err error
		if id, err = s.claimSession(b.Session); err != nil {
			return CoordResult{}, err
		}
	}
	res := CoordResult{Session: id, Node: s.Node, Mode: string(d.Mode())}
	switch op {
	case CoordClaims:
		res.Claims = d.ClaimsOf(id)
	case CoordCheck:
		for _, r := range b.Claims {
			r.Session = id
			res.Holders = append(res.Holders, d.Held(r)...)
		}
	case CoordRelease:
		before := d.ClaimsOf(id)
		if b.All {
			if err := d.Release(ctx, id, "", true); err != nil {
				return res, fmt.Errorf("node: release of %s's claims: %w", id, err)
			}
		} else {
			for _, r := range b.Claims {
				if len(r.Paths) == 0 {
					continue
				}
				if err := d.Release(ctx, id, r.Repo, false, r.Paths...); err != nil {
					return res, fmt.Errorf("node: release of %s's claims: %w", id, err)
				}
			}
		}
		after := map[[2]string]bool{}
		for _, c := range d.ClaimsOf(id) {
			after[[2]string{c.Repo, c.Path}] = true
		}
		for _, c := range before {
			if !after[[2]string{c.Repo, c.Path}] {
				res.Claims = append(res.Claims, c)
			}
		}
	}
	return res, nil
}

// routeCoord runs end or ping on the node that owns the session.
func (s *Service) routeCoord(ctx context.Context, op string, b CoordBody) (*api.CoordResponse, error) {
	if b.By == "" {
		b.By = "operator@" + s.Node
	}
	st, err := s.Sessions.Resolve(b.Session)
	if err == nil {
		res, err := s.coordLocal(op, st, b)
		if err != nil {
			return nil, tasksvc.Status(err)
		}
		return coordResponse(res, s.Node)
	}
	if !errors.Is(err, sessions.ErrUnknownSession) || s.Mesh() == nil {
		return nil, tasksvc.Status(err)
	}
	rec, rerr := s.Record(b.Session)
	if rerr != nil {
		return nil, tasksvc.Status(rerr)
	}
	if rec.Node == "" || rec.Node == s.Node {
		return nil, tasksvc.Status(err)
	}
	cl, cerr := s.Mesh().ClientOf(rec.Node)
	if cerr != nil {
		return nil, apigrpc.WithReason(codes.Unavailable, api.ReasonOwnerUnreachable,
			fmt.Sprintf("coord: the owner of %s, node %s, is unreachable: %v", rec.SessionID, rec.Node, cerr))
	}
	bound := coordRouteTimeout
	if op == CoordPing {
		bound = pingTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	b.Session = rec.SessionID
	b.By = operator.Part(b.By)
	req := wire.CoordRequestOf(op, b)
	req.Node = rec.Node
	out, err := cl.Coord(rctx, req)
	if err != nil {
		if st, ok := status.FromError(err); ok && (st.Code() == codes.Unavailable || st.Code() == codes.DeadlineExceeded) {
			return nil, apigrpc.WithReason(codes.Unavailable, api.ReasonOwnerUnreachable,
				fmt.Sprintf("coord: the owner of %s, node %s, is unreachable: %s", rec.SessionID, rec.Node, st.Message()))
		}
		return nil, err
	}
	return out, nil
}

// coordLocal runs end or ping on one of this node's sessions.
func (s *Service) coordLocal(op string, st presence.State, b CoordBody) (CoordResult, error) {
	res := CoordResult{Session: st.SessionID, Node: s.Node}
	switch op {
	case CoordPing:
		res.Ended, res.PID = st.Ended, st.AgentPID
		if !st.Ended && s.Tasks != nil && s.Tasks.Hosts(st.SessionID) && st.Agent == tasks.Agent {
			// harn's own session: the node owns its process, which is
			// alive while the runtime holds the session.
			res.Alive, res.Hosted, res.PID = true, true, os.Getpid()
			return res, nil
		}
		res.Alive = st.AgentPID > 0 && s.Procs.Alive(st.AgentPID, st.AgentPIDStart)
		return res, nil
	case CoordEnd:
		if st.Ended {
			res.Ended, res.Already = true, true
			return res, nil
		}
		reason := b.Reason
		if reason == "" {
			reason = ReasonOperator
		}
		if len(reason) > maxReasonLen {
			return res, status.Error(codes.InvalidArgument, fmt.Sprintf("coord: --reason is longer than %d bytes", maxReasonLen))
		}
		ts := s.Clock.Now()
		if !ts.After(st.LastEventAt) {
			ts = st.LastEventAt.Add(time.Millisecond)
		}
		ev := presence.Event{SessionID: st.SessionID, ParentSessionID: st.ParentSessionID,
			Type: presence.TypeSessionEnd, TS: ts, Agent: st.Agent,
			Attrs: map[string]any{presence.AttrReason: reason}}
		if err := s.Ingest([]presence.Event{ev}); err != nil {
			return res, err
		}
		s.Log.Info("session ended by request", "session", st.SessionID, "reason", reason, "by", b.By)
		res.Ended = true
		return res, nil
	}
	return res, status.Error(codes.InvalidArgument, "coord: unknown op "+op)
}

// ---- the cluster service ----

func (s *CoordPeer) Coord(ctx context.Context, req *api.CoordRequest) (*api.CoordResponse, error) {
	if req.Op != CoordEnd && req.Op != CoordPing {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("coord: op %q is not routed between nodes", req.Op))
	}
	b := BodyOf(req)
	st, err := s.Sessions.Resolve(b.Session)
	if err != nil {
		return nil, tasksvc.Status(err)
	}
	if req.Op == CoordEnd {
		id, err := s.Gate.Authorize(ctx, "end")
		if err != nil {
			return nil, tasksvc.Status(err)
		}
		b.By = operator.Remote(b.By, id)
	}
	res, err := s.coordLocal(req.Op, st, b)
	if err != nil {
		return nil, tasksvc.Status(err)
	}
	return coordResponse(res, s.Node)
}

// The coordination values on the wire (node/api): one function each way.

// coordBodyOf reads a Coord call's body.
func BodyOf(req *api.CoordRequest) CoordBody {
	return CoordBody{Session: req.GetSession(), Claims: claims.FromAPI(req.GetClaims()), All: req.GetAll(),
		Reason: req.GetReason(), By: req.GetBy()}
}

// CoordResultToAPI is r on the wire.
func ResultToAPI(r CoordResult) *api.CoordResult {
	return &api.CoordResult{Session: r.Session, Node: r.Node, Claims: claims.RegistryClaimsToAPI(r.Claims),
		Holders: claims.HoldersToAPI(r.Holders), Mode: r.Mode, Ended: r.Ended, Already: r.Already,
		Alive: r.Alive, Pid: int32(r.PID), Hosted: r.Hosted}
}

// maxContextID bounds the session id of a context request.
const maxContextID = 256

// Context describes a harn session's context on this node (harn context).
// The local socket's caller may read it as it may read the session's
// trace.
func (s *CoordLocal) Context(ctx context.Context, req *api.ContextRequest) (*api.ContextResponse, error) {
	if req.Session == "" || len(req.Session) > maxContextID {
		return nil, status.Error(codes.InvalidArgument, "context: name a harn session id")
	}
	if s.Tasks == nil {
		return nil, status.Error(codes.FailedPrecondition, "context: this node runs no task runtime")
	}
	v, err := s.Tasks.Context(req.Session, req.ProviderView)
	if err != nil {
		return nil, tasksvc.Status(err)
	}
	return &api.ContextResponse{ReportJson: v.Report, ProviderJson: v.Provider}, nil
}
