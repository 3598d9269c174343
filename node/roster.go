package node

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

// RosterEntry is one session as a reader anywhere sees it: its state, and
// whether its owning node can be reached now. Row is its one form for
// readers (api.SessionRow).
type RosterEntry struct {
	State presence.State
	// Reachable is false when the owning node is dead or has left.
	Reachable bool
	// UnreachableSince is when the owning node stopped being reachable.
	UnreachableSince time.Time
	// Source says where the state came from: local (this node's own
	// session), gossip (live presence of a reachable node) or registry.
	Source string
	// HarnTask is the session's harn task, if it has one.
	HarnTask *api.HarnTask
	// Hosted is the session's hosted terminal, if its node hosts it.
	Hosted *api.HostedView
	// Project, when set, is the project the owner worked out (a gossiped
	// row's, whose cwd may not have travelled); else the state's.
	Project string
}

// Row is the entry's roster row: the one function from a roster entry to
// what every reader sees.
func (r *RosterEntry) Row() *api.SessionRow {
	row := api.RowOf(&r.State)
	if r.Project != "" {
		row.Project = r.Project
	}
	row.Reachable, row.UnreachableSinceUnixNano, row.Source = r.Reachable, api.UnixNano(r.UnreachableSince), r.Source
	row.HarnTask = r.HarnTask
	row.Hosted = r.Hosted
	return row
}

// Encode is the entry's row as JSON (api.MarshalRowJSON).
func (r *RosterEntry) Encode() ([]byte, error) { return api.MarshalRowJSON(r.Row()) }

// entryOfRow is a roster entry of a row read elsewhere (the owner's, the
// gossiped one): the inverse of Row.
func entryOfRow(row *api.SessionRow) RosterEntry {
	return RosterEntry{State: row.State(), Reachable: row.GetReachable(),
		UnreachableSince: api.TimeOf(row.GetUnreachableSinceUnixNano()), Source: row.GetSource(),
		HarnTask: row.GetHarnTask(), Project: row.GetProject(), Hosted: row.GetHosted()}
}

// localEntries are this node's sessions as roster entries, each with its
// silent_since as of now.
func (n *Node) localEntries(all bool, now time.Time) []RosterEntry {
	out := make([]RosterEntry, 0, n.sess.Len())
	n.sess.Views(all, func(st *presence.State, _ *sessions.View) {
		re := RosterEntry{State: *st, Reachable: true, Source: "local"}
		re.State.SilentSince = presence.SilentSince(st, now, n.cfg.SilenceAfter)
		re.HarnTask = n.taskSvc.Brief(st.SessionID)
		re.Hosted = n.hosts.View(st)
		out = append(out, re)
	})
	return out
}

// ReadInfo says how a roster read was made and how stale it may be.
type ReadInfo struct {
	Consistent   bool
	Stale        bool
	LeaderID     string
	LastContact  string
	AppliedIndex uint64
	Mesh         bool
}

// API is the read info as the list reply carries it.
func (i ReadInfo) API() *api.ReadInfo {
	return &api.ReadInfo{Consistent: i.Consistent, Stale: i.Stale, Leader: i.LeaderID,
		LastContact: i.LastContact, AppliedIndex: i.AppliedIndex, Mesh: i.Mesh}
}

// recordState turns a registry record into a session state.
func recordState(r *raftstore.Record) presence.State {
	return presence.State{SessionID: r.SessionID, ParentSessionID: r.ParentSessionID, Agent: r.Agent,
		Node: r.Node, Name: r.Name, Activity: presence.Activity(orDefault(r.Activity, string(presence.ActivityUnknown))),
		ActivityUpdatedAt: r.ActivityAt, TaskState: presence.TaskState(orDefault(r.TaskState, string(presence.TaskActive))),
		TaskStateUpdatedAt: r.Clocks.Lifecycle, BlockerReason: r.BlockerReason, LifecycleReason: r.LifecycleReason,
		Task: r.Task, StartedAt: r.StartedAt, LastEventAt: r.UpdatedAt, Ended: r.Ended, EndedAt: r.EndedAt,
		EndReason: r.EndReason}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// reachability returns, per node name, whether it is reachable and since
// when it is not.
func (n *Node) reachability() map[string]mesh.Member {
	out := map[string]mesh.Member{}
	if n.cl == nil {
		return out
	}
	for _, m := range n.cl.Members() {
		out[m.Name] = m
	}
	return out
}

func reachable(m mesh.Member, known bool) bool {
	return known && (m.Status == mesh.StatusAlive || m.Status == mesh.StatusSuspect)
}

// registryRecords reads the registry: the local replica, or through the
// leader when consistent.
func (n *Node) registryRecords(ctx context.Context, consistent bool) ([]raftstore.Record, ReadInfo, error) {
	info := ReadInfo{Consistent: consistent, Mesh: n.cl != nil}
	if n.cl == nil {
		return nil, info, nil
	}
	fill := func(st raftstore.ReadInfo) {
		info.LeaderID, info.AppliedIndex, info.Stale = st.LeaderID, st.AppliedIndex, st.Stale
		info.LastContact = ""
		if st.LastContact >= 0 {
			info.LastContact = st.LastContact.Round(time.Millisecond).String()
		}
	}
	if !consistent {
		reg := n.cl.Registry()
		fill(reg.Staleness())
		return reg.Records(), info, nil // the roster sorts them
	}
	recs, st, err := n.cl.ConsistentRecords(ctx)
	fill(st)
	if err != nil {
		return nil, info, err
	}
	return recs, info, nil
}

// Roster merges this node's own sessions, the live presence other nodes
// gossip, and the registry: every session on every node. A session of a
// dead or departed node stays listed, unreachable, with the time since.
func (n *Node) Roster(ctx context.Context, all, consistent bool) ([]RosterEntry, ReadInfo, error) {
	return n.roster(ctx, all, consistent, true)
}

// roster is Roster; with ordered unset the entries come in no particular
// order (for a reader that sorts them its own way: node.RosterJSON).
func (n *Node) roster(ctx context.Context, all, consistent, ordered bool) ([]RosterEntry, ReadInfo, error) {
	recs, info, err := n.registryRecords(ctx, consistent)
	if err != nil {
		return nil, info, err
	}
	members := n.reachability()
	now := n.cfg.Clock.Now()
	if consistent {
		out := n.registryRoster(recs, members, all)
		n.decorateRecords(out)
		n.glance(out, now)
		return out, info, nil
	}
	out := n.localEntries(all, now)
	seen := make(map[string]bool, len(out)+len(recs))
	for i := range out {
		seen[out[i].State.SessionID] = true
	}
	if n.cl != nil {
		var byID map[string]*raftstore.Record
		for _, ne := range n.remote.All() {
			if byID == nil {
				byID = make(map[string]*raftstore.Record, len(recs))
				for i := range recs {
					byID[recs[i].SessionID] = &recs[i]
				}
			}
			if seen[ne.Entry.GetSessionId()] || ne.Node == n.cfg.Name {
				continue
			}
			m, known := members[ne.Node]
			ok := reachable(m, known)
			st := ne.Entry.State(ne.Node)
			if rec := byID[st.SessionID]; rec != nil && rec.Task != "" && len(rec.Task) > len(st.Task) {
				st.Task = rec.Task
			}
			if !ok {
				continue // an unreachable node's gossip is stale: the registry speaks
			}
			seen[st.SessionID] = true
			if st.Ended && !all {
				continue
			}
			out = append(out, RosterEntry{State: st, Reachable: true, Source: "gossip",
				HarnTask: ne.Entry.GetHarnTask(), Project: ne.Entry.GetProject(), Hosted: ne.Entry.GetHosted()})
		}
	}
	for i := range recs {
		r := &recs[i]
		if seen[r.SessionID] || r.Node == n.cfg.Name {
			continue
		}
		if r.Ended && !all {
			continue
		}
		m, known := members[r.Node]
		e := RosterEntry{State: recordState(r), Reachable: reachable(m, known), Source: "registry"}
		if !e.Reachable && known {
			e.UnreachableSince = m.Since
		}
		out = append(out, e)
	}
	n.glance(out, now)
	if !ordered {
		return out, info, nil
	}
	// Sort by index: entries are large, and moving them costs more than
	// comparing them.
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool {
		a, b := &out[idx[i]].State, &out[idx[j]].State
		if !a.StartedAt.Equal(b.StartedAt) {
			return a.StartedAt.Before(b.StartedAt)
		}
		return a.SessionID < b.SessionID
	})
	sorted := make([]RosterEntry, len(out))
	for i, k := range idx {
		sorted[i] = out[k]
	}
	return sorted, info, nil
}

// registryRoster is the roster of a consistent read: the registry's
// records as the leader holds them, nothing newer from this node's ledger
// or from gossip (which a linearizable read must not mix in), each with its
// node's reachability.
func (n *Node) registryRoster(recs []raftstore.Record, members map[string]mesh.Member, all bool) []RosterEntry {
	out := make([]RosterEntry, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		if r.Ended && !all {
			continue
		}
		e := RosterEntry{State: recordState(r), Source: "registry"}
		if r.Node == n.cfg.Name {
			e.Reachable = true
		} else {
			m, known := members[r.Node]
			e.Reachable = reachable(m, known)
			if !e.Reachable && known {
				e.UnreachableSince = m.Since
			}
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].State.SessionID < out[j].State.SessionID })
	return out
}

// decorateRecords adds to registry entries what the registry does not
// hold and every other view shows: the project (and branch) and the harn
// task, from this node's own sessions and from what their owners gossip.
// They decorate the row; the registry's fields stay as the leader read
// them.
func (n *Node) decorateRecords(out []RosterEntry) {
	for i := range out {
		e := &out[i]
		id := e.State.SessionID
		if e.State.Node == n.cfg.Name {
			if st, ok := n.sess.State(id); ok {
				e.State.Repo, e.State.Branch, e.State.Cwd = st.Repo, st.Branch, st.Cwd
			}
			e.HarnTask = n.taskSvc.Brief(id)
			if st, ok := n.sess.State(id); ok {
				e.Hosted = n.hosts.View(&st)
			}
			continue
		}
		if n.remote == nil {
			continue
		}
		if ge, ok := n.remote.Get(e.State.Node, id); ok {
			e.State.Repo, e.State.Branch, e.Project, e.HarnTask = ge.GetRepo(), ge.GetBranch(), ge.GetProject(), ge.GetHarnTask()
			e.Hosted = ge.GetHosted()
		}
	}
}

// readResult is a session read anywhere (readAnywhere).
type readResult struct {
	entry RosterEntry
	// local: the session is this node's own.
	local bool
	// since is set when the owner could not be reached and entry is the
	// registry's record: since when (as text) it cannot.
	since string
}

// readAnywhere resolves a session handle: this node's own first, else the
// registry, asking the owning node for the live detail through ask (within
// timeout). When the owner cannot be reached, it returns the registry's
// record and since when.
func (n *Node) readAnywhere(ctx context.Context, handle string, timeout time.Duration,
	ask func(ctx context.Context, cl apigrpc.ClusterClient, id string) (presence.State, error)) (readResult, error) {
	st, err := n.resolveLocal(handle)
	if err == nil {
		return readResult{entry: RosterEntry{State: st, Reachable: true, Source: "local", HarnTask: n.taskSvc.Brief(st.SessionID), Hosted: n.hosts.View(&st)}, local: true}, nil
	}
	if !errors.Is(err, ErrUnknownSession) || n.cl == nil {
		return readResult{}, err
	}
	rec, err := n.resolveRecord(handle)
	if err != nil {
		return readResult{}, err
	}
	m, known := n.reachability()[rec.Node]
	if reachable(m, known) {
		if cl, cerr := n.cl.ClientOf(rec.Node); cerr == nil {
			rctx, cancel := context.WithTimeout(ctx, timeout)
			st, rerr := ask(rctx, cl, rec.SessionID)
			cancel()
			if rerr == nil {
				e := RosterEntry{State: st, Reachable: true, Source: "owner"}
				if ge, ok := n.remote.Get(rec.Node, rec.SessionID); ok {
					e.HarnTask = ge.HarnTask // the owner's task view, as gossiped
					e.Hosted = ge.Hosted
				}
				return readResult{entry: e}, nil
			}
		}
	}
	e := RosterEntry{State: recordState(&rec), Reachable: false, Source: "registry"}
	since := "now"
	if known && !m.Since.IsZero() {
		e.UnreachableSince = m.Since
		since = presence.FormatTime(m.Since)
	}
	return readResult{entry: e, since: since}, nil
}

// ReadSession resolves a session anywhere: this node's own first, else the
// registry, asking the owning node for the live detail. When the owner
// cannot be reached, it returns the registry's record and a note saying so.
func (n *Node) ReadSession(ctx context.Context, handle string) (RosterEntry, string, error) {
	r, err := n.readAnywhere(ctx, handle, n.cfg.Cluster.OwnerReadTimeout,
		func(ctx context.Context, cl apigrpc.ClusterClient, id string) (presence.State, error) {
			res, err := cl.Session(ctx, &api.SessionRequest{Id: id})
			if err != nil {
				return presence.State{}, err
			}
			return res.GetSession().State(), nil
		})
	if err != nil {
		return r.entry, "", err
	}
	r.entry.State.SilentSince = presence.SilentSince(&r.entry.State, n.cfg.Clock.Now(), n.cfg.SilenceAfter)
	if r.since == "" {
		return r.entry, "", nil
	}
	return r.entry, fmt.Sprintf("live detail unavailable: node %s is unreachable (since %s); showing the registry's record", r.entry.State.Node, r.since), nil
}

// ReadTrace returns a session's events: from this node's ledger, or from
// the owning node. When the owner cannot be reached, it returns the
// registry's record, no events, and a note.
func (n *Node) ReadTrace(ctx context.Context, handle string) (RosterEntry, []*api.Event, string, error) {
	var evs []*api.Event
	r, err := n.readAnywhere(ctx, handle, n.cfg.Cluster.OwnerTraceTimeout,
		func(ctx context.Context, cl apigrpc.ClusterClient, id string) (presence.State, error) {
			res, err := cl.SessionTrace(ctx, &api.SessionRequest{Id: id})
			if err != nil {
				return presence.State{}, err
			}
			if err := checkPeerList("the owner of session "+id, "events", len(res.Events)); err != nil {
				return presence.State{}, err
			}
			evs = res.Events
			return res.GetSession().State(), nil
		})
	if err != nil {
		return RosterEntry{}, nil, "", err
	}
	if r.local {
		if evs, err = n.traceEvents(r.entry.State.SessionID); err != nil {
			return RosterEntry{}, nil, "", err
		}
	}
	if r.since == "" {
		return r.entry, evs, "", nil
	}
	return r.entry, nil, fmt.Sprintf("live detail unavailable: node %s is unreachable (since %s); its events stay on that node", r.entry.State.Node, r.since), nil
}

// traceEvents are a local session's events, sorted, for the wire.
func (n *Node) traceEvents(id string) ([]*api.Event, error) {
	evs, err := n.sessionEvents(id)
	if err != nil {
		return nil, err
	}
	out := make([]*api.Event, 0, len(evs))
	for i := range evs {
		out = append(out, EventToAPI(&evs[i]))
	}
	return out, nil
}

// sessionEvents are a session's events from the ledger, sorted.
func (n *Node) sessionEvents(id string) ([]presence.Event, error) {
	evs, err := n.ledger.Session(id)
	if err != nil {
		return nil, err
	}
	presence.SortEvents(evs)
	return evs, nil
}

// resolveRecord finds a registry record by handle (pickHandle).
func (n *Node) resolveRecord(handle string) (raftstore.Record, error) {
	reg := n.cl.Registry()
	if r, ok := reg.Get(handle); ok {
		return r, nil
	}
	recs := reg.List()
	cands := make([]candidate, len(recs))
	for i := range recs {
		cands[i] = candidate{id: recs[i].SessionID, name: recs[i].Name, ended: recs[i].Ended}
	}
	id, err := pickHandle(handle, cands)
	if err != nil {
		return raftstore.Record{}, err
	}
	for i := range recs {
		if recs[i].SessionID == id {
			return recs[i], nil
		}
	}
	return raftstore.Record{}, fmt.Errorf("%w %q", ErrUnknownSession, handle)
}
