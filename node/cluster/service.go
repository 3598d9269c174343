package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

// PeerService is what the cluster gRPC asks of the node for calls about
// its own sessions and tasks: their live detail, their events, and the
// remote task actions (each checks its caller itself).
type PeerService interface {
	Session(context.Context, *api.SessionRequest) (*api.SessionResponse, error)
	SessionTrace(context.Context, *api.SessionRequest) (*api.TraceResponse, error)
	Task(context.Context, *api.TaskRequest) (*api.TaskResponse, error)
	Pending(context.Context, *api.PendingRequest) (*api.PendingResponse, error)
	Answer(context.Context, *api.AnswerRequest) (*api.AnswerResponse, error)
	Coord(context.Context, *api.CoordRequest) (*api.CoordResponse, error)
}

// service is the Cluster gRPC server: the registry's writes and reads,
// membership and presence here, the rest the node's (PeerService).
type service struct {
	apigrpc.UnimplementedClusterServer
	peer PeerService
	c    *Cluster
}

var _ apigrpc.ClusterServer = (*service)(nil)

// The node's calls.

func (s *service) Session(ctx context.Context, r *api.SessionRequest) (*api.SessionResponse, error) {
	return s.peer.Session(ctx, r)
}

func (s *service) SessionTrace(ctx context.Context, r *api.SessionRequest) (*api.TraceResponse, error) {
	return s.peer.SessionTrace(ctx, r)
}

func (s *service) Task(ctx context.Context, r *api.TaskRequest) (*api.TaskResponse, error) {
	return s.peer.Task(ctx, r)
}

func (s *service) Pending(ctx context.Context, r *api.PendingRequest) (*api.PendingResponse, error) {
	return s.peer.Pending(ctx, r)
}

func (s *service) Answer(ctx context.Context, r *api.AnswerRequest) (*api.AnswerResponse, error) {
	return s.peer.Answer(ctx, r)
}

func (s *service) Coord(ctx context.Context, r *api.CoordRequest) (*api.CoordResponse, error) {
	return s.peer.Coord(ctx, r)
}

// noPeer answers none of the node's calls (a cluster without a node:
// tests).
type noPeer struct {
	apigrpc.UnimplementedClusterServer
}

// errNoLog answers a registry call that needs the raft log on a node
// that holds none.
func errNoLog(name string) error {
	return status.Error(codes.FailedPrecondition, "node: "+name+" is not a server and holds no raft log; ask a server")
}

func (s *service) Apply(ctx context.Context, req *api.ApplyRequest) (*api.ApplyResponse, error) {
	if s.c.store == nil {
		return nil, errNoLog(s.c.name)
	}
	cmd, err := raftstore.DecodeCommand(req.Command)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if s.c.trust != nil {
		caller, err := trust.PeerFromContext(ctx)
		if err == nil {
			err = meshtrust.AuthorizeWrite(s.c.reg, s.c.cfg.NotifyAdmins, caller, cmd)
		}
		if err != nil {
			return nil, meshtrust.Refuse(s.c.log, "Apply", caller, err)
		}
	}
	idx, err := s.c.store.Apply(ctx, cmd)
	if err != nil {
		if errors.Is(err, raftstore.ErrNotLeader) {
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
		if errors.Is(err, raftstore.ErrKVConflict) {
			return nil, status.Error(codes.Aborted, err.Error())
		}
		if errors.Is(err, raftstore.ErrInvalidCommand) {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		if code, ok := admissionCode(err); ok {
			// The rest of the command applied; the refused sessions did not.
			s.c.log.Warn("registry write refused in part", "index", idx, "err", err)
			return nil, admissionStatus(code, err)
		}
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &api.ApplyResponse{Index: idx}, nil
}

func (s *service) ConsistentList(ctx context.Context, _ *api.ConsistentListRequest) (*api.RegistryResponse, error) {
	if s.c.store == nil {
		return nil, errNoLog(s.c.name)
	}
	if err := s.c.store.VerifyRead(ctx); err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	recs := s.c.store.List()
	out := &api.RegistryResponse{Leader: s.c.name, Index: s.c.store.Staleness().AppliedIndex}
	for i := range recs {
		out.Records = append(out.Records, RecordToAPI(&recs[i]))
	}
	return out, nil
}

func (s *service) RemoveServer(ctx context.Context, req *api.RemoveServerRequest) (*api.RemoveServerResponse, error) {
	if s.c.trust != nil {
		// A node may take itself out; servers may remove anyone.
		caller, err := trust.PeerFromContext(ctx)
		if err == nil && caller.Name != req.Id {
			err = trust.CheckSessionWrite(caller, "", trust.WriteHousekeeping)
		}
		if err != nil {
			return nil, meshtrust.Refuse(s.c.log, "RemoveServer", caller, err)
		}
	}
	if s.c.store == nil {
		return nil, errNoLog(s.c.name)
	}
	if err := s.c.store.RemoveServer(req.Id); err != nil {
		if errors.Is(err, raftstore.ErrNotLeader) {
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &api.RemoveServerResponse{}, nil
}

func (s *service) Presence(ctx context.Context, _ *api.PresenceRequest) (*api.PresenceResponse, error) {
	b, err := json.Marshal(s.c.localBlob())
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &api.PresenceResponse{Blob: b}, nil
}

// finalApplyErr maps a forwarded Apply's refusal to a final error (nil for
// errors worth a retry: no leader, unavailable).
func finalApplyErr(err error) error {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return nil
	}
	switch st.Code() {
	case codes.PermissionDenied, codes.Unauthenticated:
		return fmt.Errorf("%w: the leader refused the write: %s", meshtrust.ErrTrust, st.Message())
	case codes.Aborted:
		return fmt.Errorf("%w: %s", raftstore.ErrKVConflict, st.Message())
	case codes.InvalidArgument:
		return fmt.Errorf("%w: %s", raftstore.ErrInvalidCommand, st.Message())
	case codes.AlreadyExists:
		return &leaderRefusal{err: raftstore.ErrSessionTaken, msg: st.Message(), sessions: refusedOf(err)}
	case codes.ResourceExhausted:
		return &leaderRefusal{err: raftstore.ErrSessionQuota, msg: st.Message(), sessions: refusedOf(err)}
	}
	return nil
}

// maxRefusedIDs bounds the session ids a leader's refusal names (a
// command holds at most a batch of them).
const maxRefusedIDs = 1024

// admissionStatus is the leader's status for a write the registry applied
// in part: its code, and the refused session ids in the ErrorInfo, so
// that the writing node tells of those sessions even while its own
// replica, which decides before a write, lags behind the leader.
func admissionStatus(code codes.Code, err error) error {
	refused := raftstore.RefusedSessions(err)
	ids := make([]string, 0, min(len(refused), maxRefusedIDs))
	for id := range refused {
		if len(ids) == maxRefusedIDs {
			break
		}
		ids = append(ids, id)
	}
	b, jerr := json.Marshal(ids)
	if jerr != nil || len(ids) == 0 {
		return status.Error(code, err.Error())
	}
	return apigrpc.WithReasonMeta(code, api.ReasonSessionsRefused, err.Error(), map[string]string{api.MetaSessions: string(b)})
}

// refusedOf reads the refused session ids from a leader's status
// (bounded; none when the leader names none).
func refusedOf(err error) []string {
	if apigrpc.Reason(err) != api.ReasonSessionsRefused {
		return nil
	}
	var ids []string
	if json.Unmarshal([]byte(apigrpc.Metadata(err)[api.MetaSessions]), &ids) != nil || len(ids) > maxRefusedIDs {
		return nil
	}
	return ids
}

// admissionCode is the status of a registry refusal of sessions: taken by
// another node, or over the quota.
func admissionCode(err error) (codes.Code, bool) {
	switch {
	case errors.Is(err, raftstore.ErrSessionTaken):
		return codes.AlreadyExists, true
	case errors.Is(err, raftstore.ErrSessionQuota):
		return codes.ResourceExhausted, true
	}
	return codes.OK, false
}

// leaderRefusal is the leader's refusal as a forwarded write sees it: its
// message, wrapping the sentinel its status code stands for.
type leaderRefusal struct {
	err      error
	msg      string
	sessions []string // the refused sessions the leader named
}

func (e *leaderRefusal) Error() string { return e.msg }
func (e *leaderRefusal) Unwrap() error { return e.err }

// RefusedSessions names the sessions the leader left out.
func (e *leaderRefusal) RefusedSessions() []string { return e.sessions }

var _ raftstore.SessionRefusal = (*leaderRefusal)(nil)
