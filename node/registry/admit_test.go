package registry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// TestWriterLeavesOutSessionsTheRegistryRefuses: a session id another node
// holds, and a session over the quota, are left out of the batch and told
// of once; the node's other sessions are written in the same flush.
func TestWriterLeavesOutSessionsTheRegistryRefuses(t *testing.T) {
	a := newApplier()
	a.reg.Apply(1, raftstore.KVCommand(raftstore.KVOp{Key: raftstore.SessionQuotaKey, Value: []byte("2")}))
	a.reg.Apply(2, raftstore.UpsertCommand(raftstore.Upsert{SessionID: "squatted", TS: t0, Identity: &raftstore.IdentityPatch{Node: "evil"}}))
	a.idx = 2
	var mu sync.Mutex
	told := map[string]error{}
	w := New(Config{ActivityFlush: time.Second, Clock: clock.NewFake(t0), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Admit: a.reg.Admit,
		OnRefused: func(id string, err error) {
			mu.Lock()
			defer mu.Unlock()
			if _, again := told[id]; again {
				t.Errorf("%s told twice", id)
			}
			told[id] = err
		}}, a)
	for _, id := range []string{"a", "b", "c", "squatted"} {
		w.Observe(session(id))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if rec, ok := a.Get(id); !ok || rec.Node != "n1" {
			t.Fatalf("%s not written: %+v", id, rec)
		}
	}
	if _, ok := a.Get("c"); ok {
		t.Fatal("c over the quota was written")
	}
	if rec, _ := a.Get("squatted"); rec.Node != "evil" {
		t.Fatalf("squatted changed: %+v", rec)
	}
	mu.Lock()
	if !errors.Is(told["c"], raftstore.ErrSessionQuota) || !errors.Is(told["squatted"], raftstore.ErrSessionTaken) || len(told) != 2 {
		t.Fatalf("told %v", told)
	}
	mu.Unlock()
	// Seen again, the refused sessions are checked again, not told again.
	w.Observe(session("c"))
	w.Observe(session("squatted"))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// A declaration's Sync gets the refusal as its error.
	if err := w.Sync(context.Background(), session("squatted")); !errors.Is(err, raftstore.ErrSessionTaken) {
		t.Fatalf("Sync of a squatted session: %v", err)
	}
}
