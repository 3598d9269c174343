package roster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

// readResult is a session read anywhere (readAnywhere).
type readResult struct {
	entry Entry
	// local: the session is this node's own.
	local bool
	// since is set when the owner could not be reached and entry is the
	// registry's record: since when (as text) it cannot.
	since string
}

// resolveLocal finds one of this node's sessions by handle.
func (ro *Roster) resolveLocal(handle string) (presence.State, error) {
	ss := ro.host.Sessions()
	if ss == nil {
		return presence.State{}, fmt.Errorf("%w %q", sessions.ErrUnknownSession, handle)
	}
	return ss.Resolve(handle)
}

// readAnywhere resolves a session handle: this node's own first, else the
// registry, asking the owning node for the live detail through ask (within
// timeout). When the owner cannot be reached, it returns the registry's
// record and since when.
func (ro *Roster) readAnywhere(ctx context.Context, handle string, timeout time.Duration,
	ask func(ctx context.Context, cl apigrpc.ClusterClient, id string) (*api.SessionRow, error)) (readResult, error) {
	st, err := ro.resolveLocal(handle)
	if err == nil {
		return readResult{entry: ro.LocalEntry(st), local: true}, nil
	}
	m := ro.host.Mesh()
	if !errors.Is(err, sessions.ErrUnknownSession) || m == nil {
		return readResult{}, err
	}
	rec, err := ro.ResolveRecord(handle)
	if err != nil {
		return readResult{}, err
	}
	mb, known := ro.Reachability()[rec.Node]
	if Reachable(mb, known) {
		if cl, cerr := m.ClientOf(rec.Node); cerr == nil {
			rctx, cancel := context.WithTimeout(ctx, timeout)
			row, rerr := ask(rctx, cl, rec.SessionID)
			cancel()
			if rerr == nil {
				e := ownerEntry(row)
				if ge, ok := ro.remote.Get(rec.Node, rec.SessionID); ok {
					e.HarnTask = ge.HarnTask // the owner's task view, as gossiped
					e.Hosted = ge.Hosted
				}
				return readResult{entry: e}, nil
			}
		}
	}
	e := recordEntry(&rec, "registry")
	since := "now"
	if known && !mb.Since.IsZero() {
		e.UnreachableSinceUnixNano = api.UnixNano(mb.Since)
		since = presence.FormatTime(mb.Since)
	}
	return readResult{entry: e, since: since}, nil
}

// ownerEntry is the row an owning node answered with, as a roster entry
// (the owner's row is the reader's own copy: the call decoded it). Its
// shown name and project are worked out again, as for any row made here.
func ownerEntry(row *api.SessionRow) Entry {
	if row == nil {
		row = &api.SessionRow{}
	}
	if row.Activity == "" {
		row.Activity = string(presence.ActivityUnknown)
	}
	if row.TaskState == "" {
		row.TaskState = string(presence.TaskActive)
	}
	row.SessionName, row.Project = sessionName(row), (&presence.State{Repo: row.GetRepo(), Cwd: row.GetCwd()}).Project()
	row.ClaimCount = 0
	row.Reachable, row.UnreachableSinceUnixNano, row.Source = true, 0, "owner"
	row.HarnTask, row.Hosted = nil, nil
	return Entry{row}
}

// ReadSession resolves a session anywhere: this node's own first, else the
// registry, asking the owning node for the live detail. When the owner
// cannot be reached, it returns the registry's record and a note saying so.
func (ro *Roster) ReadSession(ctx context.Context, handle string) (Entry, string, error) {
	r, err := ro.readAnywhere(ctx, handle, ro.cfg.OwnerReadTimeout,
		func(ctx context.Context, cl apigrpc.ClusterClient, id string) (*api.SessionRow, error) {
			res, err := cl.Session(ctx, &api.SessionRequest{Id: id})
			if err != nil {
				return nil, err
			}
			return res.GetSession(), nil
		})
	if err != nil {
		return r.entry, "", err
	}
	r.entry.SilentSinceUnixNano = api.UnixNano(r.entry.SilentSince(ro.cfg.Clock.Now(), ro.cfg.SilenceAfter))
	if r.since == "" {
		return r.entry, "", nil
	}
	return r.entry, fmt.Sprintf("live detail unavailable: node %s is unreachable (since %s); showing the registry's record", r.entry.GetNode(), r.since), nil
}

// ReadTrace returns a session's events: from this node's ledger, or from
// the owning node. When the owner cannot be reached, it returns the
// registry's record, no events, and a note.
func (ro *Roster) ReadTrace(ctx context.Context, handle string) (Entry, []*api.Event, string, error) {
	var evs []*api.Event
	r, err := ro.readAnywhere(ctx, handle, ro.cfg.OwnerTraceTimeout,
		func(ctx context.Context, cl apigrpc.ClusterClient, id string) (*api.SessionRow, error) {
			res, err := cl.SessionTrace(ctx, &api.SessionRequest{Id: id})
			if err != nil {
				return nil, err
			}
			if err := cluster.CheckPeerList("the owner of session "+id, "events", len(res.Events)); err != nil {
				return nil, err
			}
			evs = res.Events
			return res.GetSession(), nil
		})
	if err != nil {
		return Entry{}, nil, "", err
	}
	if r.local {
		if evs, err = ro.traceEvents(r.entry.GetSessionId()); err != nil {
			return Entry{}, nil, "", err
		}
	}
	if r.since == "" {
		return r.entry, evs, "", nil
	}
	return r.entry, nil, fmt.Sprintf("live detail unavailable: node %s is unreachable (since %s); its events stay on that node", r.entry.GetNode(), r.since), nil
}

// traceEvents are a local session's events, sorted, for the wire.
func (ro *Roster) traceEvents(id string) ([]*api.Event, error) {
	evs, err := ro.Events(id)
	if err != nil {
		return nil, err
	}
	out := make([]*api.Event, 0, len(evs))
	for i := range evs {
		out = append(out, wire.EventToAPI(&evs[i]))
	}
	return out, nil
}

// Events are a session's events from the ledger, sorted.
func (ro *Roster) Events(id string) ([]presence.Event, error) {
	evs, err := ro.host.Ledger().Session(id)
	if err != nil {
		return nil, err
	}
	presence.SortEvents(evs)
	return evs, nil
}

// ResolveRecord finds a registry record by handle (sessions.PickHandle).
// It needs the mesh.
func (ro *Roster) ResolveRecord(handle string) (raftstore.Record, error) {
	reg := ro.host.Registry()
	if reg == nil {
		return raftstore.Record{}, fmt.Errorf("%w %q", sessions.ErrUnknownSession, handle)
	}
	if r, ok := reg.Get(handle); ok {
		return r, nil
	}
	recs := reg.List()
	cands := make([]sessions.Candidate, len(recs))
	for i := range recs {
		cands[i] = sessions.Candidate{ID: recs[i].SessionID, Name: recs[i].Name, Ended: recs[i].Ended}
	}
	id, err := sessions.PickHandle(handle, cands)
	if err != nil {
		return raftstore.Record{}, err
	}
	for i := range recs {
		if recs[i].SessionID == id {
			return recs[i], nil
		}
	}
	return raftstore.Record{}, fmt.Errorf("%w %q", sessions.ErrUnknownSession, handle)
}

// RemoteSessionError: a handle this node does not know names a session
// that the mesh (the registry, else the gossiped roster) places on
// another node. It is an ErrUnknownSession (NotFound, the CLI's exit 3)
// whose text names the owner, so that the operator knows where to run
// the command.
type RemoteSessionError struct {
	Handle  string
	Session string
	Owner   string
}

func (e *RemoteSessionError) Error() string {
	return fmt.Sprintf("session %s is on node %s; run it there", e.Session, e.Owner)
}

// Unwrap keeps errors.Is(err, sessions.ErrUnknownSession).
func (e *RemoteSessionError) Unwrap() error { return sessions.ErrUnknownSession }

// OwnerErr turns an unknown-session err for handle into a
// RemoteSessionError when the mesh knows the session on another node;
// any other err is returned as it is.
func (ro *Roster) OwnerErr(handle string, err error) error {
	var re *RemoteSessionError
	if handle == "" || !errors.Is(err, sessions.ErrUnknownSession) || errors.As(err, &re) {
		return err
	}
	if id, owner, ok := ro.remoteOwner(handle); ok {
		return &RemoteSessionError{Handle: handle, Session: id, Owner: owner}
	}
	return err
}

// remoteOwner finds the session handle names on another node: in the
// registry's records, else in what other nodes gossip.
func (ro *Roster) remoteOwner(handle string) (id, owner string, ok bool) {
	if rec, err := ro.ResolveRecord(handle); err == nil && rec.Node != "" && rec.Node != ro.cfg.Name {
		return rec.SessionID, rec.Node, true
	}
	all := ro.remote.All()
	cands := make([]sessions.Candidate, 0, len(all))
	owners := make(map[string]string, len(all))
	for _, e := range all {
		if e.Node == ro.cfg.Name || e.Entry.SessionRow == nil {
			continue
		}
		row := e.Entry.SessionRow
		cands = append(cands, sessions.Candidate{ID: row.GetSessionId(), Name: row.GetName(), Ended: row.GetEnded()})
		owners[row.GetSessionId()] = e.Node
	}
	got, err := sessions.PickHandle(handle, cands)
	if err != nil {
		return "", "", false
	}
	return got, owners[got], true
}
