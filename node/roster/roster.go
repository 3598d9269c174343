package roster

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// Config is what the roster needs to know of its node.
type Config struct {
	// Name is this node's name.
	Name  string
	Clock clock.Clock
	// SilenceAfter is the silence rule's threshold (presence.SilentSince).
	SilenceAfter time.Duration
	// OwnerReadTimeout and OwnerTraceTimeout bound a read of a session
	// from its owning node.
	OwnerReadTimeout, OwnerTraceTimeout time.Duration
	// PeerContextBytes caps the prompt-time peer table.
	PeerContextBytes int
	Logger           *slog.Logger
}

// Sessions is this node's sessions (node/sessions).
type Sessions interface {
	Len() int
	Views(all bool, fn func(st *presence.State, v *sessions.View))
	State(id string) (presence.State, bool)
	Resolve(handle string) (presence.State, error)
}

// Registry is the registry's local replica.
type Registry interface {
	Get(id string) (raftstore.Record, bool)
	List() []raftstore.Record
	Records() []raftstore.Record
	Staleness() raftstore.ReadInfo
}

// Mesh is the node's part in the mesh (node/cluster).
type Mesh interface {
	Members() []mesh.Member
	ConsistentRecords(ctx context.Context) ([]raftstore.Record, raftstore.ReadInfo, error)
	ClientOf(name string) (apigrpc.ClusterClient, error)
}

// Ledger is what the roster reads and keeps in the node's ledger: a
// session's events, and the peer table's last hash per session.
type Ledger interface {
	Session(id string) ([]presence.Event, error)
	GetMeta(key string) ([]byte, error)
	PutMeta(key string, val []byte) error
}

// Remote is the presence other nodes gossip (node/gossip's Table).
type Remote interface {
	Get(node, session string) (gossip.Entry, bool)
	All() []gossip.NodeEntry
}

// Host gives the roster the node's rooms as they open: each may be nil
// (Sessions and Ledger until Open, Mesh and Registry without the mesh).
// HarnTask and HostedView decorate a local session's entry.
type Host interface {
	Sessions() Sessions
	Mesh() Mesh
	Registry() Registry
	Ledger() Ledger
	// Settle waits until the transcripts session's events named are read
	// (node/remint).
	Settle(session string)
	HarnTask(session string) *api.HarnTask
	HostedView(st *presence.State) *api.HostedView
	// Tasks is the node's task host (node/tasks), nil until it opens.
	Tasks() *tasks.Host
}

// Roster is the roster room. Build it with New; it holds no goroutine.
type Roster struct {
	cfg    Config
	host   Host
	remote Remote
	log    *slog.Logger
}

// New builds the roster of a node. It does no I/O.
func New(cfg Config, host Host, remote Remote) *Roster {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Roster{cfg: cfg, host: host, remote: remote, log: log}
}

// Entry is one session as a reader anywhere sees it: its state, and
// whether its owning node can be reached now. Row is its one form for
// readers (api.SessionRow).
type Entry struct {
	State presence.State
	// Reachable is false when the owning node is dead or has left.
	Reachable bool
	// UnreachableSince is when the owning node stopped being reachable.
	UnreachableSince time.Time
	// Source says where the state came from: local (this node's own
	// session), gossip (live presence of a reachable node), owner or
	// registry.
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
func (r *Entry) Row() *api.SessionRow {
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
func (r *Entry) Encode() ([]byte, error) { return api.MarshalRowJSON(r.Row()) }

// LocalEntry is one of this node's sessions as a roster entry.
func (ro *Roster) LocalEntry(st presence.State) Entry {
	return Entry{State: st, Reachable: true, Source: "local", HarnTask: ro.host.HarnTask(st.SessionID), Hosted: ro.host.HostedView(&st)}
}

// localEntries are this node's sessions as roster entries, each with its
// silent_since as of now.
func (ro *Roster) localEntries(all bool, now time.Time) []Entry {
	ss := ro.host.Sessions()
	if ss == nil {
		return nil
	}
	out := make([]Entry, 0, ss.Len())
	ss.Views(all, func(st *presence.State, _ *sessions.View) {
		re := Entry{State: *st, Reachable: true, Source: "local"}
		re.State.SilentSince = presence.SilentSince(st, now, ro.cfg.SilenceAfter)
		re.HarnTask = ro.host.HarnTask(st.SessionID)
		re.Hosted = ro.host.HostedView(st)
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

// RecordState turns a registry record into a session state.
func RecordState(r *raftstore.Record) presence.State {
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

// Reachability returns, per node name, its member record (none without
// the mesh).
func (ro *Roster) Reachability() map[string]mesh.Member {
	out := map[string]mesh.Member{}
	m := ro.host.Mesh()
	if m == nil {
		return out
	}
	for _, mb := range m.Members() {
		out[mb.Name] = mb
	}
	return out
}

// Reachable reports whether a member (known: in the member list) can be
// reached: alive or suspect.
func Reachable(m mesh.Member, known bool) bool {
	return known && (m.Status == mesh.StatusAlive || m.Status == mesh.StatusSuspect)
}

// registryRecords reads the registry: the local replica, or through the
// leader when consistent.
func (ro *Roster) registryRecords(ctx context.Context, consistent bool) ([]raftstore.Record, ReadInfo, error) {
	m := ro.host.Mesh()
	info := ReadInfo{Consistent: consistent, Mesh: m != nil}
	if m == nil {
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
		reg := ro.host.Registry()
		fill(reg.Staleness())
		return reg.Records(), info, nil // the roster sorts them
	}
	recs, st, err := m.ConsistentRecords(ctx)
	fill(st)
	if err != nil {
		return nil, info, err
	}
	return recs, info, nil
}

// List merges this node's own sessions, the live presence other nodes
// gossip, and the registry: every session on every node. A session of a
// dead or departed node stays listed, unreachable, with the time since.
// With ordered unset the entries come in no particular order (for a
// reader that sorts them its own way: Rows).
func (ro *Roster) List(ctx context.Context, all, consistent, ordered bool) ([]Entry, ReadInfo, error) {
	recs, info, err := ro.registryRecords(ctx, consistent)
	if err != nil {
		return nil, info, err
	}
	members := ro.Reachability()
	now := ro.cfg.Clock.Now()
	if consistent {
		out := ro.registryRoster(recs, members, all)
		ro.decorateRecords(out)
		ro.glance(out, now)
		return out, info, nil
	}
	out := ro.localEntries(all, now)
	seen := make(map[string]bool, len(out)+len(recs))
	for i := range out {
		seen[out[i].State.SessionID] = true
	}
	if info.Mesh {
		var byID map[string]*raftstore.Record
		for _, ne := range ro.remote.All() {
			if byID == nil {
				byID = make(map[string]*raftstore.Record, len(recs))
				for i := range recs {
					byID[recs[i].SessionID] = &recs[i]
				}
			}
			if seen[ne.Entry.GetSessionId()] || ne.Node == ro.cfg.Name {
				continue
			}
			m, known := members[ne.Node]
			ok := Reachable(m, known)
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
			out = append(out, Entry{State: st, Reachable: true, Source: "gossip",
				HarnTask: ne.Entry.GetHarnTask(), Project: ne.Entry.GetProject(), Hosted: ne.Entry.GetHosted()})
		}
	}
	for i := range recs {
		r := &recs[i]
		if seen[r.SessionID] || r.Node == ro.cfg.Name {
			continue
		}
		if r.Ended && !all {
			continue
		}
		m, known := members[r.Node]
		e := Entry{State: RecordState(r), Reachable: Reachable(m, known), Source: "registry"}
		if !e.Reachable && known {
			e.UnreachableSince = m.Since
		}
		out = append(out, e)
	}
	ro.glance(out, now)
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
	sorted := make([]Entry, len(out))
	for i, k := range idx {
		sorted[i] = out[k]
	}
	return sorted, info, nil
}

// registryRoster is the roster of a consistent read: the registry's
// records as the leader holds them, nothing newer from this node's ledger
// or from gossip (which a linearizable read must not mix in), each with its
// node's reachability.
func (ro *Roster) registryRoster(recs []raftstore.Record, members map[string]mesh.Member, all bool) []Entry {
	out := make([]Entry, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		if r.Ended && !all {
			continue
		}
		e := Entry{State: RecordState(r), Source: "registry"}
		if r.Node == ro.cfg.Name {
			e.Reachable = true
		} else {
			m, known := members[r.Node]
			e.Reachable = Reachable(m, known)
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
func (ro *Roster) decorateRecords(out []Entry) {
	ss := ro.host.Sessions()
	for i := range out {
		e := &out[i]
		id := e.State.SessionID
		if e.State.Node == ro.cfg.Name {
			if ss == nil {
				continue
			}
			if st, ok := ss.State(id); ok {
				e.State.Repo, e.State.Branch, e.State.Cwd = st.Repo, st.Branch, st.Cwd
				e.Hosted = ro.host.HostedView(&st)
			}
			e.HarnTask = ro.host.HarnTask(id)
			continue
		}
		if ge, ok := ro.remote.Get(e.State.Node, id); ok {
			e.State.Repo, e.State.Branch, e.Project, e.HarnTask = ge.GetRepo(), ge.GetBranch(), ge.GetProject(), ge.GetHarnTask()
			e.Hosted = ge.GetHosted()
		}
	}
}
