package roster

import (
	"context"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/presence"
)

// RosterPeer answers the cluster gRPC's calls about this node's own
// sessions for another node's reader (its part of cluster.PeerService):
// a session's live detail and its trace.
type RosterPeer struct {
	Roster *Roster
	// Resolve finds one of this node's sessions by a handle
	// (node/sessions).
	Resolve func(handle string) (presence.State, error)
	// ErrStatus maps the node's errors to the RPC's status.
	ErrStatus func(error) error
}

// Session is a session's live detail, for another node's reader.
func (s *RosterPeer) Session(ctx context.Context, req *api.SessionRequest) (*api.SessionResponse, error) {
	st, err := s.Resolve(req.Id)
	if err != nil {
		return nil, s.ErrStatus(err)
	}
	return &api.SessionResponse{Session: api.RowOf(&st), Live: !st.Ended}, nil
}

// SessionTrace is a session's events, for another node's reader.
func (s *RosterPeer) SessionTrace(ctx context.Context, req *api.SessionRequest) (*api.TraceResponse, error) {
	st, err := s.Resolve(req.Id)
	if err != nil {
		return nil, s.ErrStatus(err)
	}
	evs, err := s.Roster.Events(st.SessionID)
	if err != nil {
		return nil, s.ErrStatus(err)
	}
	out := &api.TraceResponse{Session: api.RowOf(&st)}
	for i := range evs {
		out.Events = append(out.Events, wire.EventToAPI(&evs[i]))
	}
	return out, nil
}
