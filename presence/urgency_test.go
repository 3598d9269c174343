package presence

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestUrgencyClassOrder(t *testing.T) {
	cases := []struct {
		name string
		key  UrgencyKey
		want Urgency
	}{
		{"needs input", UrgencyKey{Activity: ActivityNeedsInput, TaskState: TaskActive}, UrgencyNeedsInput},
		{"needs input while blocked is needs input", UrgencyKey{Activity: ActivityNeedsInput, TaskState: TaskBlocked}, UrgencyNeedsInput},
		{"blocked and working", UrgencyKey{Activity: ActivityWorking, TaskState: TaskBlocked}, UrgencyBlocked},
		{"blocked and idle", UrgencyKey{Activity: ActivityIdle, TaskState: TaskBlocked}, UrgencyBlocked},
		{"working", UrgencyKey{Activity: ActivityWorking, TaskState: TaskActive}, UrgencyWorking},
		{"working and done", UrgencyKey{Activity: ActivityWorking, TaskState: TaskDone}, UrgencyWorking},
		{"idle", UrgencyKey{Activity: ActivityIdle, TaskState: TaskActive}, UrgencyIdle},
		{"unknown", UrgencyKey{Activity: ActivityUnknown, TaskState: TaskActive}, UrgencyUnknown},
		{"an activity this version does not know", UrgencyKey{Activity: "paused", TaskState: TaskActive}, UrgencyUnknown},
		{"ended needs input", UrgencyKey{Activity: ActivityNeedsInput, Ended: true}, UrgencyEnded},
	}
	for _, c := range cases {
		if got := c.key.Class(); got != c.want {
			t.Errorf("%s: class %v, want %v", c.name, got, c.want)
		}
	}
}

// TestUrgencySortsNeedsInputFirstOldestWaitFirst: needs_input, then
// blocked, working, idle and unknown; within a class the oldest wait
// first (a blocked session's wait is its task state's time); ties by id.
func TestUrgencySortsNeedsInputFirstOldestWaitFirst(t *testing.T) {
	t0 := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	keys := []UrgencyKey{
		{SessionID: "idle-1", Activity: ActivityIdle, TaskState: TaskActive, ActivityUpdatedAt: at(1)},
		{SessionID: "unknown", Activity: ActivityUnknown, TaskState: TaskActive},
		{SessionID: "work-new", Activity: ActivityWorking, TaskState: TaskActive, ActivityUpdatedAt: at(9)},
		{SessionID: "ask-new", Activity: ActivityNeedsInput, TaskState: TaskActive, ActivityUpdatedAt: at(8)},
		// Blocked long ago, but its activity moved recently: the task
		// state's time is its wait.
		{SessionID: "blocked-old", Activity: ActivityWorking, TaskState: TaskBlocked, ActivityUpdatedAt: at(9), TaskStateUpdatedAt: at(2)},
		{SessionID: "blocked-new", Activity: ActivityIdle, TaskState: TaskBlocked, ActivityUpdatedAt: at(1), TaskStateUpdatedAt: at(5)},
		{SessionID: "ask-old", Activity: ActivityNeedsInput, TaskState: TaskActive, ActivityUpdatedAt: at(3)},
		{SessionID: "work-old", Activity: ActivityWorking, TaskState: TaskActive, ActivityUpdatedAt: at(4)},
		{SessionID: "work-no-time", Activity: ActivityWorking, TaskState: TaskActive},
		{SessionID: "ask-old-b", Activity: ActivityNeedsInput, TaskState: TaskActive, ActivityUpdatedAt: at(3)},
		{SessionID: "ended", Activity: ActivityNeedsInput, TaskState: TaskActive, Ended: true, ActivityUpdatedAt: at(0)},
	}
	slices.SortFunc(keys, CompareUrgency)
	var got []string
	for _, k := range keys {
		got = append(got, k.SessionID)
	}
	want := []string{"ask-old", "ask-old-b", "ask-new", "blocked-old", "blocked-new",
		"work-old", "work-new", "work-no-time", "idle-1", "unknown", "ended"}
	if !slices.Equal(got, want) {
		t.Errorf("order\n got %v\nwant %v", got, want)
	}
}

func TestUrgencyKeyOfState(t *testing.T) {
	t0 := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	s := NewState("s-1")
	s.Activity, s.TaskState, s.ActivityUpdatedAt, s.TaskStateUpdatedAt = ActivityIdle, TaskBlocked, t0, t0.Add(time.Minute)
	k := s.UrgencyKey()
	if k.Class() != UrgencyBlocked || !k.Since().Equal(t0.Add(time.Minute)) || k.SessionID != "s-1" {
		t.Errorf("key %+v: class %v since %v", k, k.Class(), k.Since())
	}
}

// genUrgencyKey draws keys from small domains so that ties in every field
// happen often.
func genUrgencyKey(t *rapid.T, label string) UrgencyKey {
	t0 := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	tm := func(name string) time.Time {
		n := rapid.IntRange(-1, 3).Draw(t, label+name)
		if n < 0 {
			return time.Time{}
		}
		return t0.Add(time.Duration(n) * time.Millisecond)
	}
	return UrgencyKey{
		SessionID: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, label+"id"),
		Activity: rapid.SampledFrom([]Activity{ActivityNeedsInput, ActivityWorking, ActivityIdle,
			ActivityUnknown, "other"}).Draw(t, label+"activity"),
		TaskState:          rapid.SampledFrom([]TaskState{TaskActive, TaskBlocked, TaskDone}).Draw(t, label+"task"),
		Ended:              rapid.IntRange(0, 5).Draw(t, label+"ended") == 0,
		ActivityUpdatedAt:  tm("activity_at"),
		TaskStateUpdatedAt: tm("task_at"),
	}
}

// TestCompareUrgencyIsStrictWeakOrder: irreflexive, antisymmetric,
// transitive, and "neither comes first" is transitive too; so any sort
// gives the same order up to equal keys.
func TestCompareUrgencyIsStrictWeakOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b, c := genUrgencyKey(t, "a"), genUrgencyKey(t, "b"), genUrgencyKey(t, "c")
		less := func(x, y UrgencyKey) bool { return CompareUrgency(x, y) < 0 }
		equiv := func(x, y UrgencyKey) bool { return !less(x, y) && !less(y, x) }
		if less(a, a) {
			t.Fatalf("irreflexivity: %+v < itself", a)
		}
		if sign(CompareUrgency(a, b)) != -sign(CompareUrgency(b, a)) {
			t.Fatalf("antisymmetry: %+v vs %+v", a, b)
		}
		if less(a, b) && less(b, a) {
			t.Fatalf("asymmetry: %+v and %+v both first", a, b)
		}
		if less(a, b) && less(b, c) && !less(a, c) {
			t.Fatalf("transitivity: %+v < %+v < %+v but not a < c", a, b, c)
		}
		if equiv(a, b) && equiv(b, c) && !equiv(a, c) {
			t.Fatalf("transitivity of equivalence: %+v ~ %+v ~ %+v", a, b, c)
		}
		// Equivalent keys agree on everything the order reads.
		if equiv(a, b) && (a.Class() != b.Class() || !a.Since().Equal(b.Since()) || a.SessionID != b.SessionID) {
			t.Fatalf("equivalent keys differ: %+v %+v", a, b)
		}
	})
}

// TestCompareUrgencySortIsDeterministic: a permutation of the same keys
// sorts to the same sequence of ids.
func TestCompareUrgencySortIsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 12).Draw(t, "n")
		keys := make([]UrgencyKey, n)
		for i := range keys {
			keys[i] = genUrgencyKey(t, "k")
			keys[i].SessionID = string(rune('a' + i))
		}
		perm := rapid.Permutation(keys).Draw(t, "perm")
		s1, s2 := slices.Clone(keys), slices.Clone(perm)
		slices.SortFunc(s1, CompareUrgency)
		slices.SortStableFunc(s2, CompareUrgency)
		for i := range s1 {
			if s1[i].SessionID != s2[i].SessionID {
				t.Fatalf("sorts differ at %d: %v vs %v", i, s1[i].SessionID, s2[i].SessionID)
			}
		}
	})
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
