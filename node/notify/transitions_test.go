package notify

import (
	"slices"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"pgregory.net/rapid"
)

func kindsOf(ts []Transition) []Kind {
	out := make([]Kind, len(ts))
	for i, t := range ts {
		out[i] = t.Kind
	}
	return out
}

func TestNeedsInputWhenActivityBecomesNeedsInput(t *testing.T) {
	prev, cur := view("s1"), view("s1")
	cur.Activity, cur.WaitingOn = string(presence.ActivityNeedsInput), "Bash"
	got := Diff(&prev, cur)
	if !slices.Equal(kindsOf(got), []Kind{KindNeedsInput}) {
		t.Fatalf("got %v", kindsOf(got))
	}
	if got[0].Session.WaitingOn != "Bash" {
		t.Fatal("the transition carries the current view")
	}
	if len(Diff(&cur, cur)) != 0 {
		t.Fatal("staying needs_input is no transition")
	}
}

func TestBlockedWhenTaskStateBecomesBlockedWithReason(t *testing.T) {
	prev, cur := view("s1"), view("s1")
	cur.TaskState, cur.BlockerReason = string(presence.TaskBlocked), "waiting for repository access"
	got := Diff(&prev, cur)
	if !slices.Equal(kindsOf(got), []Kind{KindBlocked}) {
		t.Fatalf("got %v", kindsOf(got))
	}
	if txt := Text(got[0]); txt != "Sable (claude-code on buildbox) is blocked: waiting for repository access. Task: fix the tests" {
		t.Fatalf("text %q", txt)
	}
}

func TestBlockedReasonChangeWhileBlockedIsNoTransition(t *testing.T) {
	prev, cur := view("s1"), view("s1")
	prev.TaskState, prev.BlockerReason = string(presence.TaskBlocked), "a"
	cur.TaskState, cur.BlockerReason = string(presence.TaskBlocked), "b"
	if got := Diff(&prev, cur); len(got) != 0 {
		t.Fatalf("got %v", kindsOf(got))
	}
}

func TestDoneWhenTaskStateBecomesDone(t *testing.T) {
	prev, cur := view("s1"), view("s1")
	prev.TaskState, prev.BlockerReason = string(presence.TaskBlocked), "x"
	cur.TaskState = string(presence.TaskDone)
	if got := Diff(&prev, cur); !slices.Equal(kindsOf(got), []Kind{KindDone}) {
		t.Fatalf("got %v", kindsOf(got))
	}
}

func TestUnreachableWhenOwnerBecomesUnreachable(t *testing.T) {
	prev, cur := view("s1"), view("s1")
	cur.Reachable, cur.UnreachableSinceUnixNano = false, api.UnixNano(time.Date(2026, 8, 12, 10, 2, 0, 0, time.UTC))
	got := Diff(&prev, cur)
	if !slices.Equal(kindsOf(got), []Kind{KindUnreachable}) {
		t.Fatalf("got %v", kindsOf(got))
	}
	if txt := Text(got[0]); txt != "Sable (claude-code on buildbox) is unreachable: its node has not answered since 2026-08-12T10:02:00.000Z. Task: fix the tests" {
		t.Fatalf("text %q", txt)
	}
	if got := Diff(&cur, prev); len(got) != 0 {
		t.Fatalf("becoming reachable again is no transition: %v", kindsOf(got))
	}
}

func TestSilentWhenSilentSinceBecomesSet(t *testing.T) {
	prev, cur := view("s1"), view("s1")
	cur.SilentSinceUnixNano = api.UnixNano(time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC))
	if got := Diff(&prev, cur); !slices.Equal(kindsOf(got), []Kind{KindSilent}) {
		t.Fatalf("got %v", kindsOf(got))
	}
	moved := cur.fresh()
	moved.SilentSinceUnixNano = cur.SilentSinceUnixNano + int64(time.Minute)
	if got := Diff(&cur, moved); len(got) != 0 {
		t.Fatalf("a moved silent_since is no transition: %v", kindsOf(got))
	}
}

func TestFirstSightReportsEveryHeldState(t *testing.T) {
	cur := view("s1")
	cur.Activity, cur.TaskState, cur.BlockerReason = string(presence.ActivityNeedsInput), string(presence.TaskBlocked), "r"
	if got := Diff(nil, cur); !slices.Equal(kindsOf(got), []Kind{KindNeedsInput, KindBlocked}) {
		t.Fatalf("got %v", kindsOf(got))
	}
	if got := Diff(nil, view("s2")); len(got) != 0 {
		t.Fatalf("a working, active, reachable session holds nothing: %v", kindsOf(got))
	}
}

// model is the property test's own account of which states hold, kept by
// the operations below and never by Holds.
type model map[Kind]bool

// TestTransitionsProperty: over random sequences of changes, no transition
// is emitted when nothing relevant changed, and each relevant change (a
// state that did not hold and now holds) emits exactly one transition.
func TestTransitionsProperty(t *testing.T) {
	activities := []presence.Activity{presence.ActivityUnknown, presence.ActivityWorking, presence.ActivityNeedsInput, presence.ActivityIdle}
	states := []presence.TaskState{presence.TaskActive, presence.TaskBlocked, presence.TaskDone}
	base := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		s := view("s1")
		m := model{}
		for step := range rapid.IntRange(1, 30).Draw(rt, "steps") {
			prev, before := s.fresh(), model{}
			for k, v := range m {
				before[k] = v
			}
			for range rapid.IntRange(0, 4).Draw(rt, "ops") {
				switch rapid.IntRange(0, 5).Draw(rt, "op") {
				case 0:
					a := rapid.SampledFrom(activities).Draw(rt, "activity")
					s.Activity, m[KindNeedsInput] = string(a), a == presence.ActivityNeedsInput
				case 1:
					ts := rapid.SampledFrom(states).Draw(rt, "task_state")
					s.TaskState = string(ts)
					m[KindBlocked], m[KindDone] = ts == presence.TaskBlocked, ts == presence.TaskDone
					if ts == presence.TaskBlocked {
						s.BlockerReason = rapid.StringN(0, 8, -1).Draw(rt, "reason")
					} else {
						s.BlockerReason = ""
					}
				case 2:
					r := rapid.Bool().Draw(rt, "reachable")
					s.Reachable, m[KindUnreachable] = r, !r
					s.UnreachableSinceUnixNano = 0
					if !r {
						s.UnreachableSinceUnixNano = api.UnixNano(base.Add(time.Duration(step) * time.Second))
					}
				case 3:
					on := rapid.Bool().Draw(rt, "silent")
					m[KindSilent] = on
					s.SilentSinceUnixNano = 0
					if on {
						s.SilentSinceUnixNano = api.UnixNano(base.Add(time.Duration(step) * time.Second))
					}
				case 4: // irrelevant fields
					s.Name = rapid.StringN(0, 8, -1).Draw(rt, "name")
					s.Task = rapid.StringN(0, 8, -1).Draw(rt, "task")
					s.WaitingOn = rapid.StringN(0, 8, -1).Draw(rt, "waiting_on")
					s.Agent = rapid.SampledFrom([]string{"claude-code", "codex"}).Draw(rt, "agent")
				case 5: // times move while their state holds
					if s.SilentSinceUnixNano != 0 {
						s.SilentSinceUnixNano += int64(time.Second)
					}
					if s.UnreachableSinceUnixNano != 0 {
						s.UnreachableSinceUnixNano += int64(time.Second)
					}
				}
			}
			got := Diff(&prev, s)
			counts := map[Kind]int{}
			for _, tr := range got {
				counts[tr.Kind]++
				if tr.Session != s {
					rt.Fatalf("transition %s does not carry the current view", tr.Kind)
				}
			}
			for _, k := range Kinds {
				want := 0
				if !before[k] && m[k] {
					want = 1
				}
				if counts[k] != want {
					rt.Fatalf("step %d: %s emitted %d times, want %d (before %v after %v)", step, k, counts[k], want, before, m)
				}
			}
			changed := false
			for _, k := range Kinds {
				changed = changed || (!before[k] && m[k])
			}
			if !changed && len(got) != 0 {
				rt.Fatalf("nothing relevant changed and %v was emitted", kindsOf(got))
			}
		}
	})
}
