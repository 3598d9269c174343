package node

import (
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/presence"
)

// PresenceEntry is what a node gossips about one of its sessions: small and
// bounded, so that one delta fits a UDP packet.
type PresenceEntry struct {
	SessionID       string    `json:"id"`
	ParentSessionID string    `json:"parent,omitempty"`
	Name            string    `json:"name,omitempty"`
	Agent           string    `json:"agent,omitempty"`
	Task            string    `json:"task,omitempty"`
	Activity        string    `json:"activity"`
	ActivityAt      time.Time `json:"activity_at,omitzero"`
	ActivitySource  string    `json:"activity_source,omitempty"`
	TaskState       string    `json:"task_state"`
	TaskStateAt     time.Time `json:"task_state_at,omitzero"`
	BlockerReason   string    `json:"blocker,omitempty"`
	Claims          []string  `json:"claims,omitempty"`
	ClaimCount      int       `json:"claims_n,omitempty"`
	Ended           bool      `json:"ended,omitempty"`
	EndReason       string    `json:"end_reason,omitempty"`
	StartedAt       time.Time `json:"started_at,omitzero"`
	LastEventAt     time.Time `json:"last_event_at,omitzero"`
	Hash            string    `json:"hash"`
}

// Bounds of a gossiped entry.
const (
	gossipTaskChars   = 160
	gossipReasonChars = presence.MaxHashedReason
	gossipClaims      = 6
)

func entryOf(s *presence.State, hash string) PresenceEntry {
	e := PresenceEntry{SessionID: s.SessionID, ParentSessionID: s.ParentSessionID, Name: s.Name,
		Agent: s.Agent, Task: clip(s.Task, gossipTaskChars), Activity: string(s.Activity),
		ActivityAt: s.ActivityUpdatedAt, ActivitySource: s.ActivitySource, TaskState: string(s.TaskState),
		TaskStateAt: s.TaskStateUpdatedAt, BlockerReason: clip(s.BlockerReason, gossipReasonChars),
		ClaimCount: len(s.Claims), Ended: s.Ended, EndReason: s.EndReason, StartedAt: s.StartedAt,
		LastEventAt: s.LastEventAt, Hash: hash}
	if len(s.Claims) > 0 {
		n := min(len(s.Claims), gossipClaims)
		e.Claims = append([]string(nil), s.Claims[:n]...)
	}
	return e
}

// encodeDelta encodes an entry to fit one gossip frame, dropping detail
// (claims, then task and reason length) until it does.
func encodeDelta(e PresenceEntry) ([]byte, error) {
	for step := 0; ; step++ {
		b, err := json.Marshal(e)
		if err != nil || len(b) <= mesh.MaxFrameSize-64 {
			return b, err
		}
		switch step {
		case 0:
			e.Claims = nil
		case 1:
			e.Task = clip(e.Task, 40)
			e.BlockerReason = clip(e.BlockerReason, 40)
		case 2:
			e.ActivitySource, e.EndReason = "", ""
		default:
			e.Task, e.BlockerReason, e.Name = "", "", clip(e.Name, 20)
			b, err := json.Marshal(e)
			return b, err
		}
	}
}

// stateOf turns a gossiped entry into a session state for readers.
func (e *PresenceEntry) stateOf(node string) presence.State {
	s := presence.State{SessionID: e.SessionID, ParentSessionID: e.ParentSessionID, Agent: e.Agent,
		Node: node, Name: e.Name, Activity: presence.Activity(e.Activity), ActivityUpdatedAt: e.ActivityAt,
		ActivitySource: e.ActivitySource, TaskState: presence.TaskState(e.TaskState),
		TaskStateUpdatedAt: e.TaskStateAt, BlockerReason: e.BlockerReason, Task: e.Task,
		Claims: e.Claims, StartedAt: e.StartedAt, LastEventAt: e.LastEventAt, Ended: e.Ended,
		EndReason: e.EndReason}
	if s.BlockerReason != "" {
		s.LifecycleReason = s.BlockerReason
	}
	return s
}

// blob is a node's full presence, exchanged on push/pull.
type blob struct {
	Node    string          `json:"node"`
	At      uint64          `json:"at"`
	Entries []PresenceEntry `json:"entries"`
	// Versions parallel Entries.
	Versions []uint64 `json:"versions"`
}

// remoteEntry is one remote session's latest gossiped presence.
type remoteEntry struct {
	version uint64
	entry   PresenceEntry
}

// remotePresence keeps what other nodes gossiped, per node and session.
type remotePresence struct {
	mu    sync.Mutex
	nodes map[string]map[string]remoteEntry
}

func newRemotePresence() *remotePresence {
	return &remotePresence{nodes: map[string]map[string]remoteEntry{}}
}

func (r *remotePresence) apply(node string, version uint64, e PresenceEntry) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.nodes[node]
	if m == nil {
		m = map[string]remoteEntry{}
		r.nodes[node] = m
	}
	if cur, ok := m[e.SessionID]; ok && cur.version >= version {
		return false
	}
	m[e.SessionID] = remoteEntry{version: version, entry: e}
	return true
}

// merge applies a node's full blob: newer entries win, and entries the
// blob no longer lists (older than the blob) are dropped.
func (r *remotePresence) merge(b blob) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.nodes[b.Node]
	if m == nil {
		m = map[string]remoteEntry{}
		r.nodes[b.Node] = m
	}
	listed := make(map[string]bool, len(b.Entries))
	for i, e := range b.Entries {
		v := uint64(0)
		if i < len(b.Versions) {
			v = b.Versions[i]
		}
		listed[e.SessionID] = true
		if cur, ok := m[e.SessionID]; ok && cur.version >= v {
			continue
		}
		m[e.SessionID] = remoteEntry{version: v, entry: e}
	}
	for id, cur := range m {
		if !listed[id] && cur.version < b.At {
			delete(m, id)
		}
	}
}

func (r *remotePresence) get(node, session string) (PresenceEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.nodes[node][session]
	return e.entry, ok
}

// all returns every remote entry with its node, sorted.
func (r *remotePresence) all() []nodeEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []nodeEntry
	for node, m := range r.nodes {
		for _, e := range m {
			out = append(out, nodeEntry{node: node, entry: e.entry})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].entry.SessionID < out[j].entry.SessionID })
	return out
}

type nodeEntry struct {
	node  string
	entry PresenceEntry
}

// dropNode forgets a node's gossiped presence.
func (r *remotePresence) dropNode(node string) {
	r.mu.Lock()
	delete(r.nodes, node)
	r.mu.Unlock()
}
