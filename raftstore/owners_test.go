package raftstore

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func start(id, node string, ms int) Upsert {
	return Upsert{SessionID: id, TS: at(ms), Identity: &IdentityPatch{Node: node, Agent: "claude-code"}}
}

func setQuota(t *testing.T, r *Registry, index uint64, n int) {
	t.Helper()
	mustApply(t, r, index, KVCommand(KVOp{Key: SessionQuotaKey, Value: []byte(strconv.Itoa(n))}))
}

func TestFirstOwnerHoldsTheSessionID(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, UpsertCommand(start("s", "squatter", 1)))
	// The real owner's later start, with its task, changes nothing of s;
	// its other session in the same batch is written.
	err := r.Apply(2, BatchCommand(start("s", "owner", 5),
		Upsert{SessionID: "s", TS: at(5), Task: &TaskPatch{Text: "real task"}},
		start("mine", "owner", 5)))
	var te *SessionTakenError
	if !errors.Is(err, ErrSessionTaken) || !errors.As(err, &te) || te.Owner != "squatter" || te.Writer != "owner" {
		t.Fatalf("want a SessionTakenError naming both nodes, got %v", err)
	}
	for _, want := range []string{`"s"`, `node "squatter"`, `node "owner"`, "unique per owner"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	if rec, _ := r.Get("s"); rec.Node != "squatter" || rec.Task != "" {
		t.Fatalf("s changed: %+v", rec)
	}
	if rec, ok := r.Get("mine"); !ok || rec.Node != "owner" {
		t.Fatalf("the owner's own session was not written: %+v", rec)
	}
	// The holder's own writes go on.
	mustApply(t, r, 3, UpsertCommand(Upsert{SessionID: "s", TS: at(6), Task: &TaskPatch{Text: "t"}, Identity: &IdentityPatch{Node: "squatter", Name: "x"}}))
	// An ended session still holds its id; a delete frees it.
	mustApply(t, r, 4, UpsertCommand(Upsert{SessionID: "s", TS: at(7), End: &EndPatch{Ended: true}}))
	if err := r.Apply(5, UpsertCommand(start("s", "owner", 8))); !errors.Is(err, ErrSessionTaken) {
		t.Fatalf("an ended session's id was taken over: %v", err)
	}
	mustApply(t, r, 6, DeleteCommand("s"))
	mustApply(t, r, 7, UpsertCommand(start("s", "owner", 9)))
	if rec, _ := r.Get("s"); rec.Node != "owner" {
		t.Fatalf("after the delete, the owner could not write s: %+v", rec)
	}
}

func TestAdmitTellsTheWriterBeforeItWrites(t *testing.T) {
	r := NewRegistry()
	setQuota(t, r, 1, 2)
	mustApply(t, r, 2, BatchCommand(start("a", "n1", 1), start("theirs", "n2", 1)))
	v := r.Admit("n1", []string{"a", "theirs", "b", "c"})
	if v["a"] != nil || !errors.Is(v["theirs"], ErrSessionTaken) || v["b"] != nil || !errors.Is(v["c"], ErrSessionQuota) {
		t.Fatalf("admit %v", v)
	}
}

func TestSessionQuotaRefusesTheSessionOverIt(t *testing.T) {
	r := NewRegistry()
	if r.SessionQuota() != DefaultSessionQuota || DefaultSessionQuota != 5000 {
		t.Fatalf("default quota %d", r.SessionQuota())
	}
	setQuota(t, r, 1, 2)
	mustApply(t, r, 2, BatchCommand(start("a", "n1", 1), start("b", "n1", 1)))
	err := r.Apply(3, BatchCommand(start("c", "n1", 2), Upsert{SessionID: "c", TS: at(2), Task: &TaskPatch{Text: "x"}},
		start("d", "n1", 2), start("other", "n2", 2),
		Upsert{SessionID: "a", TS: at(2), Activity: &ActivityPatch{Activity: "working"}}))
	var qe *SessionQuotaError
	if !errors.As(err, &qe) || qe.Node != "n1" || qe.Quota != 2 || len(qe.SessionIDs) != 2 {
		t.Fatalf("want one SessionQuotaError for c and d, got %v", err)
	}
	for _, want := range []string{"2 live sessions", "--session-quota", `"c"`, `node "n1"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	for _, id := range []string{"c", "d"} {
		if _, ok := r.Get(id); ok {
			t.Errorf("%s over the quota is in the registry", id)
		}
	}
	if rec, _ := r.Get("a"); rec.Activity != "working" {
		t.Fatal("an existing session's write in the same batch was refused")
	}
	if _, ok := r.Get("other"); !ok {
		t.Fatal("another node's session was refused by n1's quota")
	}
	// Ending a session makes room; the snapshot keeps the count.
	mustApply(t, r, 4, UpsertCommand(Upsert{SessionID: "a", TS: at(3), End: &EndPatch{Ended: true}}))
	snap, _ := r.Snapshot()
	r2 := NewRegistry()
	if err := r2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	for _, reg := range []*Registry{r, r2} {
		if err := reg.Apply(5, UpsertCommand(start("c", "n1", 4))); err != nil {
			t.Fatalf("after an end, a new session is still refused: %v", err)
		}
		if err := reg.Apply(6, UpsertCommand(start("d", "n1", 4))); !errors.Is(err, ErrSessionQuota) {
			t.Fatalf("the third live session was taken: %v", err)
		}
	}
}

// TestLiveCountsMatchTheRecords: whatever is applied, the live count per
// node equals a count over the records, and no node holds more live
// sessions than the quota allows.
func TestLiveCountsMatchTheRecords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := NewRegistry()
		quota := rapid.IntRange(1, 4).Draw(t, "quota")
		r.Apply(1, KVCommand(KVOp{Key: SessionQuotaKey, Value: []byte(strconv.Itoa(quota))}))
		n := rapid.IntRange(1, 40).Draw(t, "steps")
		for i := 0; i < n; i++ {
			id := rapid.SampledFrom([]string{"s1", "s2", "s3", "s4", "s5", "s6"}).Draw(t, "id")
			node := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "node")
			var c Command
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				c = UpsertCommand(start(id, node, i))
			case 1:
				c = UpsertCommand(Upsert{SessionID: id, TS: at(i), End: &EndPatch{Ended: rapid.Bool().Draw(t, "ended")}})
			case 2:
				c = DeleteCommand(id)
			case 3:
				c = BatchCommand(start(id, node, i), start(id+"x", node, i))
			}
			_ = r.Apply(uint64(i+2), c)
		}
		want := map[string]int{}
		for _, rec := range r.List() {
			if rec.Node != "" && !rec.Ended {
				want[rec.Node]++
			}
		}
		for _, node := range []string{"a", "b"} {
			if got := r.LiveSessions(node); got != want[node] {
				t.Fatalf("node %s: live count %d, records say %d", node, got, want[node])
			}
		}
	})
}

func TestClaimInASessionsNameByAnotherNodeEndsWithItsRecord(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, ClaimCmd("s", "squatter", "repo", at(1), "a.go"))
	mustApply(t, r, 2, ClaimCmd("s", "owner", "repo", at(1), "b.go"))
	mustApply(t, r, 3, UpsertCommand(start("s", "owner", 2)))
	if _, ok := r.ClaimOf("repo", "a.go"); ok {
		t.Fatal("a claim another node made in s's name outlived s's record")
	}
	if c, ok := r.ClaimOf("repo", "b.go"); !ok || c.Node != "owner" {
		t.Fatalf("the owner's own claim was dropped: %+v", c)
	}
}
