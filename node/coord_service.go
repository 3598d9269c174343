package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/tasksvc"
	"github.com/harn-dev/harn/presence"
)

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

func (s *localService) Coord(ctx context.Context, req *api.CoordRequest) (*api.CoordResponse, error) {
	b := coordBodyOf(req)
	if b.Session == "" && req.Op != CoordCheck {
		return nil, status.Error(codes.InvalidArgument, "coord: name the session (--session ID)")
	}
	var (
		res CoordResult
		err error
	)
	switch req.Op {
	case CoordRelease, CoordClaims, CoordCheck:
		res, err = s.n.coordClaims(ctx, req.Op, b)
	case CoordEnd, CoordPing:
		b.By = operator.By(ctx, s.n.cfg.Name, b.By)
		return s.n.routeCoord(ctx, req.Op, b)
	default:
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("coord: unknown op %q: use release, claims, check, end or ping", req.Op))
	}
	if errors.Is(err, ErrNoClaims) {
		return nil, status.Error(codes.FailedPrecondition, err.Error()+" (--claims off)")
	}
	if errors.Is(err, ErrTrust) { // the leader's write authority refused a release
		return nil, writeRefusedStatus(err)
	}
	if err != nil {
		return nil, tasksvc.Status(err)
	}
	return coordResponse(res, s.n.cfg.Name)
}

func coordResponse(res CoordResult, node string) (*api.CoordResponse, error) {
	return &api.CoordResponse{Result: CoordResultToAPI(res), Node: node}, nil
}

// claimSession resolves a handle for the claim ops: a session of this
// node, a registry record, or (for a session the node never saw, whose
// claims outlive its record) the id as given.
func (n *Node) claimSession(handle string) (string, error) {
	st, err := n.resolveLocal(handle)
	if err == nil {
		return st.SessionID, nil
	}
	if !errors.Is(err, ErrUnknownSession) {
		return "", err
	}
	if n.cl != nil {
		rec, rerr := n.resolveRecord(handle)
		if rerr == nil {
			return rec.SessionID, nil
		}
		if !errors.Is(rerr, ErrUnknownSession) {
			return "", rerr
		}
	}
	return handle, nil
}

// coordClaims runs release, claims and check against the claims room.
func (n *Node) coordClaims(ctx context.Context, op string, b CoordBody) (CoordResult, error) {
	d := n.claims.Load()
	if d == nil {
		return CoordResult{}, ErrNoClaims
	}
	id := b.Session // "" for check: a commit outside any session
	if id != "" {
		var err error
		if id, err = n.claimSession(b.Session); err != nil {
			return CoordResult{}, err
		}
	}
	res := CoordResult{Session: id, Node: n.cfg.Name, Mode: string(d.Mode())}
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
func (n *Node) routeCoord(ctx context.Context, op string, b CoordBody) (*api.CoordResponse, error) {
	if b.By == "" {
		b.By = "operator@" + n.cfg.Name
	}
	st, err := n.resolveLocal(b.Session)
	if err == nil {
		res, err := n.coordLocal(op, st, b)
		if err != nil {
			return nil, tasksvc.Status(err)
		}
		return coordResponse(res, n.cfg.Name)
	}
	if !errors.Is(err, ErrUnknownSession) || n.cl == nil {
		return nil, tasksvc.Status(err)
	}
	rec, rerr := n.resolveRecord(b.Session)
	if rerr != nil {
		return nil, tasksvc.Status(rerr)
	}
	if rec.Node == "" || rec.Node == n.cfg.Name {
		return nil, tasksvc.Status(err)
	}
	cl, cerr := n.cl.ClientOf(rec.Node)
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
	req := CoordRequestOf(op, b)
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
func (n *Node) coordLocal(op string, st presence.State, b CoordBody) (CoordResult, error) {
	res := CoordResult{Session: st.SessionID, Node: n.cfg.Name}
	switch op {
	case CoordPing:
		res.Ended, res.PID = st.Ended, st.AgentPID
		if !st.Ended && n.tasks != nil && n.tasks.Hosts(st.SessionID) && st.Agent == tasks.Agent {
			// harn's own session: the node owns its process, which is
			// alive while the runtime holds the session.
			res.Alive, res.Hosted, res.PID = true, true, os.Getpid()
			return res, nil
		}
		res.Alive = st.AgentPID > 0 && n.procs.Alive(st.AgentPID, st.AgentPIDStart)
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
		ts := n.cfg.Clock.Now()
		if !ts.After(st.LastEventAt) {
			ts = st.LastEventAt.Add(time.Millisecond)
		}
		ev := presence.Event{SessionID: st.SessionID, ParentSessionID: st.ParentSessionID,
			Type: presence.TypeSessionEnd, TS: ts, Agent: st.Agent,
			Attrs: map[string]any{presence.AttrReason: reason}}
		if _, err := n.Ingest([]presence.Event{ev}); err != nil {
			return res, err
		}
		n.log.Info("session ended by request", "session", st.SessionID, "reason", reason, "by", b.By)
		res.Ended = true
		return res, nil
	}
	return res, status.Error(codes.InvalidArgument, "coord: unknown op "+op)
}

// coordNode is what the cluster service needs of the local half for
// coordination.
type coordNode interface {
	resolveLocal(handle string) (presence.State, error)
	coordLocal(op string, st presence.State, b CoordBody) (CoordResult, error)
}

// ---- the cluster service ----

func (s peerService) Coord(ctx context.Context, req *api.CoordRequest) (*api.CoordResponse, error) {
	if req.Op != CoordEnd && req.Op != CoordPing {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("coord: op %q is not routed between nodes", req.Op))
	}
	b := coordBodyOf(req)
	ln := s.n
	st, err := ln.resolveLocal(b.Session)
	if err != nil {
		return nil, tasksvc.Status(err)
	}
	if req.Op == CoordEnd {
		id, err := s.n.gate.Authorize(ctx, "end")
		if err != nil {
			return nil, tasksvc.Status(err)
		}
		b.By = operator.Remote(b.By, id)
	}
	res, err := ln.coordLocal(req.Op, st, b)
	if err != nil {
		return nil, tasksvc.Status(err)
	}
	return coordResponse(res, s.n.cfg.Name)
}
