package declare

import (
	"context"
	"encoding/json"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/presence"
)

// DeclareLocal is the room's part of the local server (api.LocalServer):
// whoami, lifecycle, task and claim.
type DeclareLocal struct {
	Decl *Declarer
	// Row is a session of this node as a roster row.
	Row func(presence.State) *api.SessionRow
	// OwnerErr names, for a session this node does not own, the node
	// that does (node/roster).
	OwnerErr func(handle string, err error) error
	// ErrStatus maps the node's errors to the RPC's status.
	ErrStatus func(error) error
}

// Whoami is the live session the calling process belongs to.
func (s *DeclareLocal) Whoami(ctx context.Context, req *api.WhoamiRequest) (*api.SessionResponse, error) {
	anc := make([]Proc, 0, len(req.Ancestry))
	for _, p := range req.Ancestry {
		anc = append(anc, Proc{PID: int(p.Pid), Start: p.Start})
	}
	st, err := s.Decl.Whoami(anc)
	if err != nil {
		return nil, s.ErrStatus(err)
	}
	return &api.SessionResponse{Session: s.Row(st), Live: !st.Ended}, nil
}

// Lifecycle declares a session's task state.
func (s *DeclareLocal) Lifecycle(ctx context.Context, req *api.LifecycleRequest) (*api.LifecycleResponse, error) {
	res, err := s.Decl.LifecycleFrom(ctx, Caller{PID: operator.CallerPID(ctx)}, req.SessionId, presence.TaskState(req.TaskState), req.Reason)
	if err != nil {
		return nil, s.ErrStatus(s.OwnerErr(req.SessionId, err))
	}
	b, _ := json.Marshal(res.State)
	out := &api.LifecycleResponse{SessionJson: b, Recorded: res.Recorded, Note: res.Note}
	if !res.Recorded {
		out.Note = "unchanged: the session already has this state and reason; nothing recorded"
	}
	return out, nil
}

// SetTask sets a session's task text.
func (s *DeclareLocal) SetTask(ctx context.Context, req *api.SetTaskRequest) (*api.MutateResponse, error) {
	st, warn, err := s.Decl.SetTask(req.SessionId, req.Task)
	if err != nil {
		return nil, s.ErrStatus(s.OwnerErr(req.SessionId, err))
	}
	b, _ := json.Marshal(st)
	return &api.MutateResponse{SessionJson: b, Warning: warn}, nil
}

// Claim sets a session's claimed paths.
func (s *DeclareLocal) Claim(ctx context.Context, req *api.ClaimRequest) (*api.MutateResponse, error) {
	st, err := s.Decl.Claim(req.SessionId, req.Paths)
	if err != nil {
		return nil, s.ErrStatus(s.OwnerErr(req.SessionId, err))
	}
	b, _ := json.Marshal(st)
	return &api.MutateResponse{SessionJson: b}, nil
}
