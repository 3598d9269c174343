package roster

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

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

// Entry is one session as a reader anywhere sees it: its roster row
// (api.SessionRow, the one row type: the session's state and the
// roster's own fields: whether its owning node can be reached now and
// since when, where the row came from, its harn task and hosted
// terminal). The merged list carries each row once, made once: from a
// local session's state, from a peer's gossiped row (a copy), from the
// owner's row, or from a registry record.
type Entry struct {
	*api.SessionRow
}

// Row is the entry's roster row.
func (r *Entry) Row() *api.SessionRow { return r.SessionRow }

// Encode is the entry's row as JSON (api.MarshalRowJSON).
func (r *Entry) Encode() ([]byte, error) { return api.MarshalRowJSON(r.Row()) }

// LocalEntry is one of this node's sessions as a roster entry.
func (ro *Roster) LocalEntry(st presence.State) Entry {
	row := api.RowOf(&st)
	row.Reachable, row.Source = true, "local"
	row.HarnTask, row.Hosted = ro.host.HarnTask(st.SessionID), ro.host.HostedView(&st)
	return Entry{row}
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
		row := api.RowOf(st)
		row.SilentSinceUnixNano = api.UnixNano(presence.SilentSince(st, now, ro.cfg.SilenceAfter))
		row.Reachable, row.Source = true, "local"
		row.HarnTask, row.Hosted = ro.host.HarnTask(st.SessionID), ro.host.HostedView(st)
		out = append(out, Entry{row})
	})
	return out
}

// gossipEntry is a peer's gossiped row as a roster entry: a copy (the
// gossip table's row is not changed), with the sender's node whatever
// the row says.
func gossipEntry(ne gossip.NodeEntry) Entry {
	row := &api.SessionRow{}
	if ne.Entry.SessionRow != nil {
		row = proto.Clone(ne.Entry.SessionRow).(*api.SessionRow)
	}
	row.Node = ne.Node
	if row.BlockerReason != "" && row.LifecycleReason == "" {
		row.LifecycleReason = row.BlockerReason
	}
	if row.Activity == "" {
		row.Activity = string(presence.ActivityUnknown)
	}
	if row.TaskState == "" {
		row.TaskState = string(presence.TaskActive)
	}
	if row.Project == "" {
		row.Project = row.ProjectName()
	}
	row.ClaimCount = 0 // gossip's own: a reader's row lists the claims it has
	row.Reachable, row.Source = true, "gossip"
	row.UnreachableSinceUnixNano = 0
	return Entry{row}
}

// sessionName is the shown name a state with the row's name, task and
// lifecycle has (presence.State.SessionName).
func sessionName(r *api.SessionRow) string {
	if r.GetName() == "" {
		return ""
	}
	return presence.ProjectName(r.GetName(), r.GetTask(), presence.TaskState(r.GetTaskState()))
}

// recordEntry is a registry record as a roster entry.
func recordEntry(r *raftstore.Record, source string) Entry {
	st := RecordState(r)
	row := api.RowOf(&st)
	row.Source = source
	return Entry{row}
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
		seen[out[i].GetSessionId()] = true
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
			id := ne.Entry.GetSessionId()
			if seen[id] || ne.Node == ro.cfg.Name {
				continue
			}
			m, known := members[ne.Node]
			if !Reachable(m, known) {
				continue // an unreachable node's gossip is stale: the registry speaks
			}
			seen[id] = true
			if ne.Entry.GetEnded() && !all {
				continue
			}
			e := gossipEntry(ne)
			if rec := byID[id]; rec != nil && rec.Task != "" && len(rec.Task) > len(e.Task) {
				e.Task = rec.Task
			}
			e.SessionName = sessionName(e.SessionRow)
			out = append(out, e)
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
		e := recordEntry(r, "registry")
		e.Reachable = Reachable(m, known)
		if !e.Reachable && known {
			e.UnreachableSinceUnixNano = api.UnixNano(m.Since)
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
		a, b := out[idx[i]].SessionRow, out[idx[j]].SessionRow
		if sa, sb := a.GetStartedAtUnixNano(), b.GetStartedAtUnixNano(); sa != sb {
			return sa < sb
		}
		return a.GetSessionId() < b.GetSessionId()
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
		e := recordEntry(r, "registry")
		if r.Node == ro.cfg.Name {
			e.Reachable = true
		} else {
			m, known := members[r.Node]
			e.Reachable = Reachable(m, known)
			if !e.Reachable && known {
				e.UnreachableSinceUnixNano = api.UnixNano(m.Since)
			}
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetSessionId() < out[j].GetSessionId() })
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
		id := e.GetSessionId()
		if e.GetNode() == ro.cfg.Name {
			if ss == nil {
				continue
			}
			if st, ok := ss.State(id); ok {
				e.Repo, e.Branch, e.Cwd, e.Project = st.Repo, st.Branch, st.Cwd, st.Project()
				e.Hosted = ro.host.HostedView(&st)
			}
			e.HarnTask = ro.host.HarnTask(id)
			continue
		}
		if ge, ok := ro.remote.Get(e.GetNode(), id); ok {
			e.Repo, e.Branch, e.Project, e.HarnTask = ge.GetRepo(), ge.GetBranch(), ge.GetProject(), ge.GetHarnTask()
			if e.Project == "" {
				e.Project = e.ProjectName()
			}
			e.Hosted = ge.GetHosted()
		}
	}
}
