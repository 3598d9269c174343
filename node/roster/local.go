package roster

import (
	"context"
	"time"

	"github.com/harn-dev/harn/node/api"
)

// RosterLocal is the roster's part of the local server (api.LocalServer):
// the list of sessions, one session, and its trace.
type RosterLocal struct {
	Roster *Roster
	// Node is this node's name.
	Node string
	// ErrStatus maps the node's errors to the RPC's status.
	ErrStatus func(error) error
	// Waiter serves the waits (wait.go).
	Waiter Waiter
}

// List is the roster's rows.
func (s *RosterLocal) List(ctx context.Context, req *api.ListRequest) (*api.ListResponse, error) {
	// The array is sorted by urgency where it is written: the roster's
	// own order would be undone.
	entries, info, err := s.Roster.List(ctx, req.All, req.Consistent, !req.JsonArray)
	if err != nil {
		return nil, s.ErrStatus(err)
	}
	out := &api.ListResponse{Node: s.Node, Read: info.API()}
	if req.JsonArray {
		out.Rows = s.Roster.Rows(entries, time.Duration(req.SilenceAfterMs)*time.Millisecond)
		return out, nil
	}
	out.Rows = make([]*api.SessionRow, len(entries))
	for i := range entries {
		out.Rows[i] = entries[i].Row()
	}
	return out, nil
}

// Get is one session, wherever it runs.
func (s *RosterLocal) Get(ctx context.Context, req *api.SessionRequest) (*api.SessionResponse, error) {
	e, note, err := s.Roster.ReadSession(ctx, req.Id)
	if err != nil {
		return nil, s.ErrStatus(err)
	}
	return &api.SessionResponse{Session: e.Row(), Live: !e.GetEnded(), Note: note}, nil
}

// Trace is one session's events, wherever it runs.
func (s *RosterLocal) Trace(ctx context.Context, req *api.SessionRequest) (*api.TraceResponse, error) {
	e, evs, note, err := s.Roster.ReadTrace(ctx, req.Id)
	if err != nil {
		return nil, s.ErrStatus(err)
	}
	return &api.TraceResponse{Session: e.Row(), Events: evs, Note: note}, nil
}
