package board

import (
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/node/api"
)

func genRow(t *rapid.T, label string) Row {
	tm := func(name string) time.Time {
		if rapid.Bool().Draw(t, label+name+"zero") {
			return time.Time{}
		}
		return t0.Add(-time.Duration(rapid.IntRange(0, 5).Draw(t, label+name)) * time.Minute)
	}
	return Row{SessionRow: &api.SessionRow{SessionId: rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, label+"id"),
		Node:                       rapid.SampledFrom([]string{"n1", "n2"}).Draw(t, label+"node"),
		Activity:                   rapid.SampledFrom([]string{"working", "needs_input", "idle", "unknown", "", "weird"}).Draw(t, label+"act"),
		TaskState:                  rapid.SampledFrom([]string{"active", "blocked", "done", ""}).Draw(t, label+"lc"),
		ActivityUpdatedAtUnixNano:  ns(tm("at")),
		TaskStateUpdatedAtUnixNano: ns(tm("lt"))}}
}

// TestOrderIsAStrictWeakOrdering: irreflexive, asymmetric, transitive, so
// sort.Slice gives one answer whatever the input order.
func TestOrderIsAStrictWeakOrdering(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b, c := genRow(t, "a"), genRow(t, "b"), genRow(t, "c")
		if DefaultLess(a, a) {
			t.Fatal("a < a")
		}
		if DefaultLess(a, b) && DefaultLess(b, a) {
			t.Fatal("a < b and b < a")
		}
		if DefaultLess(a, b) && DefaultLess(b, c) && !DefaultLess(a, c) {
			t.Fatal("not transitive")
		}
	})
}

// TestNeedsInputThenBlockedThenWorkingIdleUnknown: the rank decides first.
func TestNeedsInputThenBlockedThenWorkingIdleUnknown(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rows := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Row { return genRow(t, "r") }), 0, 12).Draw(t, "rows")
		sort.SliceStable(rows, func(i, j int) bool { return DefaultLess(rows[i], rows[j]) })
		for i := 1; i < len(rows); i++ {
			if rank(rows[i-1]) > rank(rows[i]) {
				t.Fatalf("%v (rank %d) before %v (rank %d)", rows[i-1], rank(rows[i-1]), rows[i], rank(rows[i]))
			}
		}
	})
}

func TestOldestWaitFirstWithinARank(t *testing.T) {
	old := Row{SessionRow: &api.SessionRow{SessionId: "z", Activity: "needs_input", ActivityUpdatedAtUnixNano: ns(t0.Add(-time.Hour))}}
	fresh := Row{SessionRow: &api.SessionRow{SessionId: "a", Activity: "needs_input", ActivityUpdatedAtUnixNano: ns(t0.Add(-time.Minute))}}
	unknownTime := Row{SessionRow: &api.SessionRow{SessionId: "0", Activity: "needs_input"}}
	if !DefaultLess(old, fresh) || !DefaultLess(fresh, unknownTime) {
		t.Fatal("needs_input: the oldest wait does not come first")
	}
	// A blocked row waits since its lifecycle changed, not its activity.
	b1 := Row{SessionRow: &api.SessionRow{SessionId: "b1", Activity: "working", ActivityUpdatedAtUnixNano: ns(t0), TaskState: "blocked", TaskStateUpdatedAtUnixNano: ns(t0.Add(-time.Hour))}}
	b2 := Row{SessionRow: &api.SessionRow{SessionId: "b2", Activity: "idle", ActivityUpdatedAtUnixNano: ns(t0.Add(-2 * time.Hour)), TaskState: "blocked", TaskStateUpdatedAtUnixNano: ns(t0.Add(-time.Minute))}}
	if !DefaultLess(b1, b2) {
		t.Fatal("blocked: the oldest block does not come first")
	}
	// needs_input outranks blocked, even when the row is both.
	both := Row{SessionRow: &api.SessionRow{SessionId: "x", Activity: "needs_input", TaskState: "blocked"}}
	if rank(both) != rankNeedsInput || !DefaultLess(both, b1) {
		t.Fatal("needs_input and blocked does not rank as needs_input")
	}
}
