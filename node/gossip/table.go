package gossip

import (
	"sort"
	"sync"
)

// remoteEntry is one remote session's latest gossiped presence.
type remoteEntry struct {
	version uint64
	entry   Entry
}

// Table keeps what other nodes gossiped, per node and session: the newest
// version of each entry wins.
type Table struct {
	mu    sync.Mutex
	nodes map[string]map[string]remoteEntry
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{nodes: map[string]map[string]remoteEntry{}}
}

func (t *Table) nodeLocked(node string) map[string]remoteEntry {
	m := t.nodes[node]
	if m == nil {
		m = map[string]remoteEntry{}
		t.nodes[node] = m
	}
	return m
}

// Apply records a delta of node's at version; it reports whether it was
// newer than what the table held.
func (t *Table) Apply(node string, version uint64, e Entry) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.nodeLocked(node)
	if cur, ok := m[e.GetSessionId()]; ok && cur.version >= version {
		return false
	}
	m[e.GetSessionId()] = remoteEntry{version: version, entry: e}
	return true
}

// Merge applies a node's full blob: newer entries win, and entries the
// blob no longer lists (older than the blob) are dropped.
func (t *Table) Merge(b Blob) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.nodeLocked(b.Node)
	listed := make(map[string]bool, len(b.Entries))
	for i, e := range b.Entries {
		v := uint64(0)
		if i < len(b.Versions) {
			v = b.Versions[i]
		}
		listed[e.GetSessionId()] = true
		if cur, ok := m[e.GetSessionId()]; ok && cur.version >= v {
			continue
		}
		m[e.GetSessionId()] = remoteEntry{version: v, entry: e}
	}
	for id, cur := range m {
		if !listed[id] && cur.version < b.At {
			delete(m, id)
		}
	}
}

// Get returns node's entry for session.
func (t *Table) Get(node, session string) (Entry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.nodes[node][session]
	return e.entry, ok
}

// Version is the version of node's entry for session (0: none).
func (t *Table) Version(node, session string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nodes[node][session].version
}

// Forget drops node's entry for session, as if its delta never came.
func (t *Table) Forget(node, session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.nodes[node], session)
}

// Nodes lists the nodes the table holds entries for, sorted.
func (t *Table) Nodes() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.nodes))
	for n := range t.nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NodeEntry is a remote entry with its node.
type NodeEntry struct {
	Node  string
	Entry Entry
}

// All returns every remote entry with its node, sorted by session id.
func (t *Table) All() []NodeEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []NodeEntry
	for node, m := range t.nodes {
		for _, e := range m {
			out = append(out, NodeEntry{Node: node, Entry: e.entry})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entry.GetSessionId() < out[j].Entry.GetSessionId() })
	return out
}

// DropNode forgets a node's gossiped presence.
func (t *Table) DropNode(node string) {
	t.mu.Lock()
	delete(t.nodes, node)
	t.mu.Unlock()
}

// Digest is the digest of node's live entries as this table holds them.
func (t *Table) Digest(node string) string {
	t.mu.Lock()
	pairs := make([][2]string, 0, len(t.nodes[node]))
	for id, e := range t.nodes[node] {
		if !e.entry.GetEnded() {
			pairs = append(pairs, [2]string{id, e.entry.Hash})
		}
	}
	t.mu.Unlock()
	return Digest(pairs)
}
