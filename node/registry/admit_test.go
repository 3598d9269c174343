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

// TestLeadersRefusalIsToldWhenTheReplicaLags: this node's replica admits
// a session (it has not yet seen the node's other sessions), the leader
// refuses it over the quota. The writer tells of that session once, keeps
// it out of later flushes, and writes the node's other sessions.
func TestLeadersRefusalIsToldWhenTheReplicaLags(t *testing.T) {
	a := newApplier()
	a.reg.Apply(1, raftstore.KVCommand(raftstore.KVOp{Key: raftstore.SessionQuotaKey, Value: []byte("2")}))
	a.reg.Apply(2, raftstore.UpsertCommand(raftstore.Upsert{SessionID: "q1", TS: t0, Identity: &raftstore.IdentityPatch{Node: "n1"}}))
	a.reg.Apply(3, raftstore.UpsertCommand(raftstore.Upsert{SessionID: "q2", TS: t0, Identity: &raftstore.IdentityPatch{Node: "n1"}}))
	a.idx = 3
	lagging := raftstore.NewRegistry() // the replica knows neither the quota nor q1, q2
	var mu sync.Mutex
	told := map[string]int{}
	w := New(Config{ActivityFlush: time.Second, Clock: clock.NewFake(t0), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Admit: lagging.Admit,
		OnRefused: func(id string, err error) {
			mu.Lock()
			defer mu.Unlock()
			if !errors.Is(err, raftstore.ErrSessionQuota) {
				t.Errorf("%s told %v", id, err)
			}
			told[id]++
		}}, a)
	w.Observe(session("q3"))
	w.Observe(session("q1"))
	if err := w.Flush(); !errors.Is(err, raftstore.ErrSessionQuota) {
		t.Fatalf("flush: %v", err)
	}
	if err := w.Flush(); err != nil { // q1 again, q3 left out
		t.Fatalf("second flush: %v", err)
	}
	if rec, ok := a.Get("q1"); !ok || rec.Name != "Flint" {
		t.Fatalf("q1 not written: %+v", rec)
	}
	if _, ok := a.Get("q3"); ok {
		t.Fatal("q3 over the quota was written")
	}
	// A declaration's Sync of another new session: refused by the leader,
	// told once.
	if err := w.Sync(context.Background(), session("q4")); !errors.Is(err, raftstore.ErrSessionQuota) {
		t.Fatalf("Sync over the quota: %v", err)
	}
	w.Observe(session("q3"))
	w.Flush()
	mu.Lock()
	defer mu.Unlock()
	if told["q3"] != 1 || told["q4"] != 1 || len(told) != 2 {
		t.Fatalf("told %v, want q3 and q4 once each", told)
	}
}
