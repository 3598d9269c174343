package raftstore

import (
	"testing"
	"time"
)

// TestRegistryClampsRecordsFromTheFuture: an upsert whose times lie more
// than MaxAhead after the entry's append time is applied at the append
// time (truncated to the second), for every group and for started_at; a
// time within the bound, or an entry with no append time, is kept.
func TestRegistryClampsRecordsFromTheFuture(t *testing.T) {
	appended := t0.Add(300 * time.Millisecond)
	y2100 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewRegistry()
	if err := r.ApplyAt(1, appended, UpsertCommand(Upsert{SessionID: "s", TS: y2100,
		Identity: &IdentityPatch{Node: "n", StartedAt: y2100},
		Activity: &ActivityPatch{Activity: "working"}})); err != nil {
		t.Fatal(err)
	}
	rec, _ := r.Get("s")
	if !rec.StartedAt.Equal(t0) || !rec.ActivityAt.Equal(t0) || !rec.UpdatedAt.Equal(t0) || !rec.Clocks.Activity.Equal(t0) {
		t.Fatalf("record from 2100: started %v, activity at %v, updated %v; want all %v", rec.StartedAt, rec.ActivityAt, rec.UpdatedAt, t0)
	}
	// Not pinned: a later honest write moves the activity.
	if err := r.ApplyAt(2, t0.Add(2*time.Second), UpsertCommand(Upsert{SessionID: "s", TS: t0.Add(time.Second),
		Activity: &ActivityPatch{Activity: "idle"}})); err != nil {
		t.Fatal(err)
	}
	if rec, _ = r.Get("s"); rec.Activity != "idle" {
		t.Fatalf("activity %s; the 2100 write still pins it", rec.Activity)
	}
	// Within the bound: kept as sent.
	near := t0.Add(MaxAhead)
	r.ApplyAt(3, t0, UpsertCommand(Upsert{SessionID: "near", TS: near, Task: &TaskPatch{Text: "x"}}))
	if rec, _ = r.Get("near"); !rec.Clocks.Task.Equal(near) {
		t.Fatalf("a time %v ahead was changed to %v", MaxAhead, rec.Clocks.Task)
	}
	// No append time (an old entry): no bound.
	r.Apply(4, UpsertCommand(Upsert{SessionID: "old", TS: y2100, Task: &TaskPatch{Text: "x"}}))
	if rec, _ = r.Get("old"); !rec.Clocks.Task.Equal(y2100) {
		t.Fatalf("an entry with no append time was bounded: %v", rec.Clocks.Task)
	}
}

// TestRaftRegistryClampsRecordsFromTheFuture: through real raft, a record
// from 2100 is stored with the leader's append time on every replica, and
// the replicas stay equal.
func TestRaftRegistryClampsRecordsFromTheFuture(t *testing.T) {
	c := MakeCluster(t, 3, 3)
	defer c.Close()
	before := time.Now().Truncate(time.Second)
	y2100 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Apply(UpsertCommand(Upsert{SessionID: "gem", TS: y2100, Activity: &ActivityPatch{Activity: "working"}}))
	after := time.Now()
	c.EnsureSame(t)
	for _, s := range c.Running() {
		rec, ok := s.Get("gem")
		if !ok {
			continue // a follower not caught up yet is covered by EnsureSame
		}
		if rec.ActivityAt.Before(before) || rec.ActivityAt.After(after) {
			t.Fatalf("%s: activity at %v; want the append time, between %v and %v", s.ID(), rec.ActivityAt, before, after)
		}
	}
}
