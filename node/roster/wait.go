package roster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/alerts"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// WaitPoll is how often a wait looks at the roster when nothing of this
// node changed (other nodes' sessions change by gossip).
const WaitPoll = 200 * time.Millisecond

// ErrWaitEnded: the session ended without coming to the state.
var ErrWaitEnded = errors.New("node: the session ended")

// Waiter is what a wait needs beside the roster: the clock, this node's
// changes, and its stop.
type Waiter struct {
	Clock clock.Clock
	// Changes is a channel closed at the next change of this node's
	// sessions (node/alerts).
	Changes func() <-chan struct{}
	// Stop closes when the node stops; a wait then ends with Closed.
	Stop   <-chan struct{}
	Closed error
}

// WaitFor blocks until the session named by handle (or, with any, any
// live session) is in the state want, and returns its roster entry. It
// looks at the roster on every change of this node's sessions and every
// WaitPoll; it ends with ctx (ctx.Err) or when the session ended without
// coming to the state (ErrWaitEnded).
func (s *RosterLocal) WaitFor(ctx context.Context, handle string, any bool, want alerts.WaitFor) (Entry, error) {
	id := ""
	if !any {
		entries, _, err := s.Roster.List(ctx, true, false, true)
		if err != nil {
			return Entry{}, err
		}
		cands := make([]sessions.Candidate, len(entries))
		for i := range entries {
			cands[i] = sessions.Candidate{ID: entries[i].GetSessionId(), Name: entries[i].GetName(), Ended: entries[i].GetEnded()}
		}
		if id, err = sessions.PickHandle(handle, cands); err != nil {
			return Entry{}, err
		}
	}
	t := s.Waiter.Clock.NewTicker(WaitPoll)
	defer t.Stop()
	for {
		changed := s.Waiter.Changes()
		entries, _, err := s.Roster.List(ctx, !any, false, true)
		if err != nil {
			return Entry{}, err
		}
		if e, found, err := pickWaited(entries, id, want); err != nil || found {
			return e, err
		}
		select {
		case <-ctx.Done():
			return Entry{}, ctx.Err()
		case <-s.Waiter.Stop:
			return Entry{}, s.Waiter.Closed
		case <-changed:
		case <-t.C():
		}
	}
}

// pickWaited finds, in a roster, the session id (or, when id is empty,
// the first live session) in the state want, as `harn agents list` shows
// states (a subagent's input request surfaces on its parent).
func pickWaited(entries []Entry, id string, want alerts.WaitFor) (Entry, bool, error) {
	states := make([]presence.State, len(entries))
	for i := range entries {
		states[i] = entries[i].State()
	}
	presence.SurfaceChildren(states)
	for i := range entries {
		st := &states[i]
		if id != "" && st.SessionID != id {
			continue
		}
		if id == "" && st.Ended {
			continue
		}
		if want.Holds(st) {
			e := entries[i]
			if e.GetActivity() != string(st.Activity) { // surfaced: the child's wait shows on its top-level row
				e.Activity, e.ActivitySource = string(st.Activity), st.ActivitySource
				e.ActivityUpdatedAtUnixNano = api.UnixNano(st.ActivityUpdatedAt)
				e.WaitingChild, e.WaitingOn = st.WaitingChild, st.WaitingOn
			}
			return e, true, nil
		}
		if id != "" && want.Never(st) {
			return Entry{}, false, fmt.Errorf("%w: %s ended without being %s; %w", ErrWaitEnded, id, want, operator.ErrRefused)
		}
	}
	return Entry{}, false, nil
}

// Wait serves `harn agents wait`: a timeout is an answer (timed_out), not
// an error.
func (s *RosterLocal) Wait(ctx context.Context, req *api.WaitRequest) (*api.WaitResponse, error) {
	want, err := alerts.ParseWaitFor(req.For)
	if err != nil {
		return nil, s.ErrStatus(fmt.Errorf("%w: %w", operator.ErrBadRequest, err))
	}
	if req.Any == (req.Id != "") {
		return nil, s.ErrStatus(fmt.Errorf("%w: give a session id or --any, not both or neither", operator.ErrBadRequest))
	}
	wctx := ctx
	if req.TimeoutMs > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	e, err := s.WaitFor(wctx, req.Id, req.Any, want)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return &api.WaitResponse{TimedOut: true}, nil
		}
		if ctx.Err() != nil {
			return nil, status.Error(codes.Canceled, "node: the wait was cancelled")
		}
		return nil, s.ErrStatus(err)
	}
	b, err := e.Encode()
	if err != nil {
		return nil, s.ErrStatus(err)
	}
	return &api.WaitResponse{SessionJson: b}, nil
}
