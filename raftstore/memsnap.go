package raftstore

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/hashicorp/raft"
)

// MemSnapshotStore is an in-memory raft.SnapshotStore without the data
// race of raft's InmemSnapshotStore, which lists and opens a snapshot
// while its sink is still writing into the shared buffer. Here a sink
// writes into a private buffer; Close publishes an immutable copy under
// the store's lock, and Cancel drops it. List and Open see complete
// snapshots only, and Open's reader shares nothing that changes.
type MemSnapshotStore struct {
	mu     sync.Mutex
	retain int
	seq    uint64    // makes ids unique when a term and index repeat
	snaps  []memSnap // oldest first
}

type memSnap struct {
	meta raft.SnapshotMeta
	data []byte
}

// NewMemSnapshotStore returns an empty store that keeps the newest
// retain snapshots (at least one).
func NewMemSnapshotStore(retain int) *MemSnapshotStore {
	return &MemSnapshotStore{retain: max(retain, 1)}
}

// Create starts a snapshot; it is listed once its sink is closed.
func (m *MemSnapshotStore) Create(version raft.SnapshotVersion, index, term uint64,
	configuration raft.Configuration, configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("raftstore: unsupported snapshot version %d", version)
	}
	m.mu.Lock()
	m.seq++
	id := fmt.Sprintf("%d-%d-%d", term, index, m.seq)
	m.mu.Unlock()
	return &memSink{store: m, meta: raft.SnapshotMeta{
		Version:            version,
		ID:                 id,
		Index:              index,
		Term:               term,
		Configuration:      configuration,
		ConfigurationIndex: configurationIndex,
	}}, nil
}

// List returns the complete snapshots, newest first.
func (m *MemSnapshotStore) List() ([]*raft.SnapshotMeta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*raft.SnapshotMeta, 0, len(m.snaps))
	for i := len(m.snaps) - 1; i >= 0; i-- {
		meta := m.snaps[i].meta
		out = append(out, &meta)
	}
	return out, nil
}

// Open returns a complete snapshot's meta and a reader of its contents.
func (m *MemSnapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.snaps {
		if s.meta.ID == id {
			meta := s.meta
			return &meta, io.NopCloser(bytes.NewReader(s.data)), nil
		}
	}
	return nil, nil, fmt.Errorf("raftstore: no snapshot %s", id)
}

func (m *MemSnapshotStore) publish(meta raft.SnapshotMeta, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snaps = append(m.snaps, memSnap{meta: meta, data: data})
	slices.SortStableFunc(m.snaps, func(a, b memSnap) int {
		if a.meta.Term != b.meta.Term {
			return cmpU64(a.meta.Term, b.meta.Term)
		}
		return cmpU64(a.meta.Index, b.meta.Index)
	})
	if over := len(m.snaps) - m.retain; over > 0 {
		m.snaps = slices.Delete(m.snaps, 0, over)
	}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// memSink is one snapshot being written. raft writes a sink from one
// goroutine; the store sees it only after Close.
type memSink struct {
	store *MemSnapshotStore
	meta  raft.SnapshotMeta
	buf   bytes.Buffer
	done  bool
}

func (s *memSink) Write(p []byte) (int, error) {
	if s.done {
		return 0, fmt.Errorf("raftstore: snapshot %s: write after close", s.meta.ID)
	}
	return s.buf.Write(p)
}

func (s *memSink) Close() error {
	if s.done {
		return nil
	}
	s.done = true
	meta := s.meta
	meta.Size = int64(s.buf.Len())
	s.store.publish(meta, bytes.Clone(s.buf.Bytes()))
	return nil
}

func (s *memSink) Cancel() error {
	s.done = true
	s.buf.Reset()
	return nil
}

func (s *memSink) ID() string { return s.meta.ID }

var _ raft.SnapshotStore = (*MemSnapshotStore)(nil)
