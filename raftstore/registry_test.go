package raftstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var t0 = time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func lifecycle(id string, ms int, state, reason string) Upsert {
	return Upsert{SessionID: id, TS: at(ms), Lifecycle: &LifecyclePatch{TaskState: state, Reason: reason}}
}

func mustApply(t *testing.T, r *Registry, index uint64, c Command) {
	t.Helper()
	if err := r.Apply(index, c); err != nil {
		t.Fatalf("apply %d: %v", index, err)
	}
}

func TestRegistryUpsertGroups(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, UpsertCommand(Upsert{SessionID: "s1", TS: at(0),
		Identity: &IdentityPatch{Node: "laptop", Agent: "claude-code", Name: "harn-1"}}))
	rec, ok := r.Get("s1")
	if !ok {
		t.Fatal("s1 missing")
	}
	if rec.TaskState != "active" || rec.Activity != "unknown" || rec.Node != "laptop" ||
		!rec.StartedAt.Equal(at(0)) || rec.Index != 1 || !rec.UpdatedAt.Equal(at(0)) {
		t.Fatalf("created record: %+v", rec)
	}
	// A patch changes only its group.
	mustApply(t, r, 2, UpsertCommand(Upsert{SessionID: "s1", TS: at(10), Task: &TaskPatch{Text: "fix the build"}}))
	mustApply(t, r, 3, UpsertCommand(lifecycle("s1", 20, "blocked", "waiting on CI")))
	mustApply(t, r, 4, UpsertCommand(Upsert{SessionID: "s1", TS: at(30), Activity: &ActivityPatch{Activity: "working"}}))
	rec, _ = r.Get("s1")
	if rec.Node != "laptop" || rec.Task != "fix the build" || rec.TaskState != "blocked" ||
		rec.BlockerReason != "waiting on CI" || rec.LifecycleReason != "waiting on CI" ||
		rec.Activity != "working" || !rec.ActivityAt.Equal(at(30)) || rec.Index != 4 || !rec.UpdatedAt.Equal(at(30)) {
		t.Fatalf("patched record: %+v", rec)
	}
	// Leaving blocked clears the blocker reason but keeps the lifecycle reason.
	mustApply(t, r, 5, UpsertCommand(lifecycle("s1", 40, "done", "merged")))
	rec, _ = r.Get("s1")
	if rec.TaskState != "done" || rec.BlockerReason != "" || rec.LifecycleReason != "merged" {
		t.Fatalf("after done: %+v", rec)
	}
	// End, then reopen.
	mustApply(t, r, 6, UpsertCommand(Upsert{SessionID: "s1", TS: at(50), End: &EndPatch{Ended: true, Reason: "exit"}}))
	rec, _ = r.Get("s1")
	if !rec.Ended || !rec.EndedAt.Equal(at(50)) || rec.EndReason != "exit" {
		t.Fatalf("after end: %+v", rec)
	}
	mustApply(t, r, 7, UpsertCommand(Upsert{SessionID: "s1", TS: at(60), End: &EndPatch{Ended: false}}))
	rec, _ = r.Get("s1")
	if rec.Ended || !rec.EndedAt.IsZero() || rec.EndReason != "" || rec.Index != 7 {
		t.Fatalf("after reopen: %+v", rec)
	}
}

func TestRegistryOlderTSDoesNotRollBack(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, UpsertCommand(lifecycle("s1", 100, "done", "")))
	mustApply(t, r, 2, UpsertCommand(Upsert{SessionID: "s1", TS: at(100), Activity: &ActivityPatch{Activity: "idle"}}))
	// A late, older report: lifecycle and activity must stay; its task
	// (a group never set) is taken.
	mustApply(t, r, 3, UpsertCommand(Upsert{SessionID: "s1", TS: at(50),
		Lifecycle: &LifecyclePatch{TaskState: "active"}, Activity: &ActivityPatch{Activity: "working"},
		Task: &TaskPatch{Text: "t"}}))
	rec, _ := r.Get("s1")
	if rec.TaskState != "done" || rec.Activity != "idle" || rec.Task != "t" || rec.Index != 3 {
		t.Fatalf("rolled back: %+v", rec)
	}
	// Entirely stale: nothing changes, not even Index.
	mustApply(t, r, 4, UpsertCommand(lifecycle("s1", 10, "blocked", "x")))
	rec, _ = r.Get("s1")
	if rec.TaskState != "done" || rec.Index != 3 {
		t.Fatalf("stale upsert changed the record: %+v", rec)
	}
	if r.Index() != 4 {
		t.Fatalf("applied index = %d, want 4", r.Index())
	}
	// Same ts, different values: the larger value wins, whatever the order.
	mustApply(t, r, 5, UpsertCommand(Upsert{SessionID: "s2", TS: at(1), Task: &TaskPatch{Text: "b"}}))
	mustApply(t, r, 6, UpsertCommand(Upsert{SessionID: "s2", TS: at(1), Task: &TaskPatch{Text: "a"}}))
	if rec, _ := r.Get("s2"); rec.Task != "b" {
		t.Fatalf("tie: task %q, want b", rec.Task)
	}
}

func TestRegistryBatchAndDelete(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, BatchCommand(
		Upsert{SessionID: "a", TS: at(1), Activity: &ActivityPatch{Activity: "working"}},
		Upsert{SessionID: "b", TS: at(1), Activity: &ActivityPatch{Activity: "idle"}},
		Upsert{SessionID: "a", TS: at(2), Activity: &ActivityPatch{Activity: "needs_input"}},
	))
	if got := r.List(); len(got) != 2 || got[0].SessionID != "a" || got[0].Activity != "needs_input" || got[1].Activity != "idle" {
		t.Fatalf("after batch: %+v", got)
	}
	// An invalid member refuses the whole batch.
	err := r.Apply(2, BatchCommand(
		Upsert{SessionID: "c", TS: at(3), Activity: &ActivityPatch{Activity: "idle"}},
		Upsert{SessionID: "d", TS: at(3), Activity: &ActivityPatch{Activity: "dancing"}},
	))
	if !errors.Is(err, ErrInvalidCommand) || !strings.Contains(err.Error(), "activity.activity") {
		t.Fatalf("invalid batch: %v", err)
	}
	if _, ok := r.Get("c"); ok {
		t.Fatal("a refused batch was partly applied")
	}
	mustApply(t, r, 3, DeleteCommand("a", "zzz"))
	if got := r.List(); len(got) != 1 || got[0].SessionID != "b" {
		t.Fatalf("after delete: %+v", got)
	}
}

func TestCommandValidation(t *testing.T) {
	long := strings.Repeat("x", 5000)
	cases := []struct {
		name  string
		cmd   Command
		field string
	}{
		{"unknown op", Command{Op: "frob"}, "op"},
		{"upsert without upserts", Command{Op: OpUpsert}, "upserts"},
		{"empty batch", BatchCommand(), "upserts"},
		{"empty delete", DeleteCommand(), "session_ids"},
		{"no session", UpsertCommand(Upsert{TS: at(1), Task: &TaskPatch{}}), "session_id"},
		{"no ts", UpsertCommand(Upsert{SessionID: "s", Task: &TaskPatch{}}), "ts"},
		{"no group", UpsertCommand(Upsert{SessionID: "s", TS: at(1)}), "upsert"},
		{"bad state", UpsertCommand(lifecycle("s", 1, "paused", "")), "lifecycle.task_state"},
		{"blocked without reason", UpsertCommand(lifecycle("s", 1, "blocked", "")), "lifecycle.reason"},
		{"long task", UpsertCommand(Upsert{SessionID: "s", TS: at(1), Task: &TaskPatch{Text: long}}), "task.text"},
		{"bad activity", UpsertCommand(Upsert{SessionID: "s", TS: at(1), Activity: &ActivityPatch{Activity: "x"}}), "activity.activity"},
		{"far ts", UpsertCommand(Upsert{SessionID: "s", TS: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), Task: &TaskPatch{}}), "ts"},
		{"bad utf8", UpsertCommand(Upsert{SessionID: "s", TS: at(1), Task: &TaskPatch{Text: "\xff"}}), "task.text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := EncodeCommand(tc.cmd)
			if !errors.Is(err, ErrInvalidCommand) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v, want ErrInvalidCommand naming %s", err, tc.field)
			}
		})
	}
}

func TestCommandEncoding(t *testing.T) {
	c := UpsertCommand(Upsert{SessionID: "s", TS: at(1), Lifecycle: &LifecyclePatch{TaskState: "blocked", Reason: "r"}})
	b, err := EncodeCommand(c)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != CommandVersion || !bytes.Contains(b, []byte(`"op":"upsert"`)) {
		t.Fatalf("entry %q", b)
	}
	got, err := DecodeCommand(b)
	if err != nil || got.Upserts[0].Lifecycle.Reason != "r" || !got.Upserts[0].TS.Equal(at(1)) {
		t.Fatalf("decode: %+v %v", got, err)
	}
	b[0] = 9
	if _, err := DecodeCommand(b); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("version 9: %v", err)
	}
}

func TestRecordJSONFieldNames(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 7, BatchCommand(
		Upsert{SessionID: "s", TS: at(1), Identity: &IdentityPatch{ParentSessionID: "p", Node: "n", Agent: "a", Name: "x"}},
		Upsert{SessionID: "s", TS: at(2), Task: &TaskPatch{Text: "t"}, Lifecycle: &LifecyclePatch{TaskState: "blocked", Reason: "r"},
			Activity: &ActivityPatch{Activity: "idle"}, End: &EndPatch{Ended: true, Reason: "bye"}},
	))
	rec, _ := r.Get("s")
	b, _ := json.Marshal(rec)
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"session_id", "parent_session_id", "node", "agent", "name", "task", "task_state",
		"blocker_reason", "lifecycle_reason", "ended", "ended_at", "end_reason", "activity", "activity_updated_at",
		"started_at", "updated_at", "index", "clocks"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
}

func TestRegistrySnapshotRestore(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, UpsertCommand(lifecycle("a", 1, "blocked", "why")))
	mustApply(t, r, 2, UpsertCommand(Upsert{SessionID: "b", TS: at(2), Identity: &IdentityPatch{Node: "n"}}))
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r2 := NewRegistry()
	mustApply(t, r2, 1, UpsertCommand(lifecycle("zzz", 1, "done", "")))
	if err := r2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	snap2, _ := r2.Snapshot()
	if !bytes.Equal(snap, snap2) || r2.Index() != 2 || r2.Len() != 2 {
		t.Fatalf("restore differs:\n%s\n%s", snap, snap2)
	}
	if err := r2.Restore([]byte{9, '{', '}'}); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("restore of version 9: %v", err)
	}
}

// genUpsert draws an upsert over a small space of sessions, times and
// values, so that ties and overlaps are common.
func genUpsert(t *rapid.T) Upsert {
	u := Upsert{
		SessionID: rapid.SampledFrom([]string{"s1", "s2", "s3"}).Draw(t, "session"),
		TS:        at(rapid.IntRange(1, 6).Draw(t, "ts")),
	}
	str := func(label string) string { return rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, label) }
	for u.Identity == nil && u.Task == nil && u.Lifecycle == nil && u.Activity == nil && u.End == nil {
		if rapid.Bool().Draw(t, "identity") {
			// One node per session: the first node to write an id holds it
			// (owners.go), so another node's identity is refused, not merged.
			u.Identity = &IdentityPatch{Node: "n-" + u.SessionID, Name: str("name")}
			if rapid.Bool().Draw(t, "started") {
				u.Identity.StartedAt = at(rapid.IntRange(0, 3).Draw(t, "started_at"))
			}
		}
		if rapid.Bool().Draw(t, "task") {
			u.Task = &TaskPatch{Text: str("text")}
		}
		if rapid.Bool().Draw(t, "lifecycle") {
			st := rapid.SampledFrom([]string{"active", "blocked", "done"}).Draw(t, "state")
			reason := str("reason")
			if st == "blocked" && reason == "" {
				reason = "r"
			}
			u.Lifecycle = &LifecyclePatch{TaskState: st, Reason: reason}
		}
		if rapid.Bool().Draw(t, "activity") {
			u.Activity = &ActivityPatch{Activity: rapid.SampledFrom([]string{"working", "idle", "needs_input"}).Draw(t, "act")}
		}
		if rapid.Bool().Draw(t, "end") {
			u.End = &EndPatch{Ended: rapid.Bool().Draw(t, "ended"), Reason: str("end_reason")}
		}
	}
	return u
}

// withoutIndex is a registry's records with Index cleared: the index
// names the entry of the last change, which depends on order.
func withoutIndex(r *Registry) string {
	recs := r.List()
	for i := range recs {
		recs[i].Index = 0
	}
	b, _ := json.Marshal(recs)
	return string(b)
}

// TestRegistryOrderIndependent: the same set of upserts, applied in any
// order, each possibly repeated and batched, gives the same records.
func TestRegistryOrderIndependent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ups := rapid.SliceOfN(rapid.Custom(genUpsert), 1, 24).Draw(t, "upserts")
		a := NewRegistry()
		for i, u := range ups {
			if err := a.Apply(uint64(i+1), UpsertCommand(u)); err != nil {
				t.Fatal(err)
			}
		}
		perm := rapid.Permutation(ups).Draw(t, "order")
		b := NewRegistry()
		idx := uint64(0)
		for len(perm) > 0 {
			n := rapid.IntRange(1, len(perm)).Draw(t, "batch")
			idx++
			if err := b.Apply(idx, BatchCommand(perm[:n]...)); err != nil {
				t.Fatal(err)
			}
			if rapid.IntRange(0, 3).Draw(t, "repeat") == 0 {
				idx++
				b.Apply(idx, BatchCommand(perm[:n]...))
			}
			perm = perm[n:]
		}
		if ga, gb := withoutIndex(a), withoutIndex(b); ga != gb {
			t.Fatalf("order changed the registry:\n%s\n%s", ga, gb)
		}
		// The snapshot of either restores to the same content.
		snap, _ := b.Snapshot()
		c := NewRegistry()
		if err := c.Restore(snap); err != nil {
			t.Fatal(err)
		}
		if withoutIndex(c) != withoutIndex(b) {
			t.Fatal("restore changed the registry")
		}
	})
}
