package raftstore

import (
	"io"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
)

// TestMemSnapshotStoreListsOnlyClosedSnapshots: a snapshot being written
// is neither listed nor opened, so no reader shares the writer's buffer
// (raft's InmemSnapshotStore races there); Cancel drops it.
func TestMemSnapshotStoreListsOnlyClosedSnapshots(t *testing.T) {
	m := NewMemSnapshotStore(2)
	sink, err := m.Create(1, 10, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // readers while the sink writes: -race must stay quiet
		defer wg.Done()
		for range 200 {
			metas, _ := m.List()
			for _, meta := range metas {
				if _, rc, err := m.Open(meta.ID); err == nil {
					io.Copy(io.Discard, rc)
				}
			}
		}
	}()
	for range 200 {
		sink.Write([]byte("0123456789"))
	}
	if metas, _ := m.List(); len(metas) != 0 {
		t.Fatalf("an unclosed snapshot is listed: %+v", metas)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	metas, _ := m.List()
	if len(metas) != 1 || metas[0].Size != 2000 || metas[0].Index != 10 {
		t.Fatalf("after close: %+v", metas)
	}
	_, rc, err := m.Open(metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rc); len(b) != 2000 {
		t.Fatalf("read %d bytes", len(b))
	}

	c, _ := m.Create(1, 20, 1, raft.Configuration{}, 1, nil)
	c.Write([]byte("x"))
	c.Cancel()
	for i, idx := range []uint64{30, 40} {
		s, _ := m.Create(1, idx, 2, raft.Configuration{}, 1, nil)
		s.Write([]byte{byte(i)})
		s.Close()
	}
	metas, _ = m.List()
	if len(metas) != 2 || metas[0].Index != 40 || metas[1].Index != 30 {
		t.Fatalf("retain 2, newest first: %+v", metas)
	}
}
