package presence

import (
	"time"
)

// SilentSince is when a working session last showed evidence, if that was
// more than after before now; otherwise the zero time. Readers set
// State.SilentSince from it. It changes no state: elapsed time never
// changes activity, and a working session that fell silent (an Esc
// interrupt fires no hook, an approval wait reports nothing) is still
// working, shown honestly as silent.
func SilentSince(s *State, now time.Time, after time.Duration) time.Time {
	return Silence(s.Activity, s.Ended, s.LastEvidenceAt, s.ActivityUpdatedAt, now, after)
}

// Silence is SilentSince over the fields it reads: a session's activity,
// whether it ended, its last evidence and its activity's time (a reader
// holding a roster row rather than a State calls it).
func Silence(activity Activity, ended bool, lastEvidence, activityAt, now time.Time, after time.Duration) time.Time {
	if activity != ActivityWorking || ended {
		return time.Time{}
	}
	at := lastEvidence
	if at.IsZero() {
		// A heartbeat written before last_evidence_at existed.
		at = activityAt
	}
	if at.IsZero() || now.Sub(at) <= after {
		return time.Time{}
	}
	return at
}

// SubagentPrefix starts the WaitingOn of a session that shows a subagent's
// input request ("subagent Flint: Bash").
const SubagentPrefix = "subagent "

// SurfaceChildren shows a subagent's input request on its top-level
// session, for a roster of states (one per session, in any order). A live
// top-level session with a live descendant (child, grandchild, …) in
// needs_input shows needs_input too, since the descendant began waiting,
// with WaitingChild naming the descendant and WaitingOn naming both
// ("subagent Flint: Bash"). When several descendants wait, the one waiting
// longest is named. Subagent rows are never changed, nor is a top-level
// session that waits on input of its own. Applying it twice changes
// nothing more. Call it on states as the fold or registry gave them.
func SurfaceChildren(states []State) {
	idx := make(map[string]int, len(states))
	for i := range states {
		if _, dup := idx[states[i].SessionID]; !dup {
			idx[states[i].SessionID] = i
		}
	}
	waiting := map[int]int{} // top-level index → waiting descendant index
	for i := range states {
		c := &states[i]
		if c.ParentSessionID == "" || c.Activity != ActivityNeedsInput || c.Ended {
			continue
		}
		top, ok := topLevel(states, idx, i)
		if !ok {
			continue
		}
		if j, have := waiting[top]; !have || waitsLonger(c, &states[j]) {
			waiting[top] = i
		}
	}
	for top, ci := range waiting {
		p, c := &states[top], &states[ci]
		if p.Ended || (p.Activity == ActivityNeedsInput && p.WaitingChild == "") {
			continue
		}
		p.Activity = ActivityNeedsInput
		p.ActivityUpdatedAt, p.ActivitySource = c.ActivityUpdatedAt, c.ActivitySource
		p.WaitingChild = c.SessionID
		p.WaitingOn = childWaitingOn(c)
	}
}

// topLevel follows the parent links of states[i] to a session that has no
// parent. ok is false when the chain leaves the roster or loops.
func topLevel(states []State, idx map[string]int, i int) (int, bool) {
	for steps := 0; steps <= len(states); steps++ {
		if states[i].ParentSessionID == "" {
			return i, true
		}
		j, ok := idx[states[i].ParentSessionID]
		if !ok {
			return 0, false
		}
		i = j
	}
	return 0, false
}

// waitsLonger orders waiting sessions: the older wait first, then by id.
func waitsLonger(a, b *State) bool {
	if !a.ActivityUpdatedAt.Equal(b.ActivityUpdatedAt) {
		return a.ActivityUpdatedAt.Before(b.ActivityUpdatedAt)
	}
	return a.SessionID < b.SessionID
}

// childWaitingOn names a waiting subagent and what it waits on.
func childWaitingOn(c *State) string {
	name := c.Name
	if name == "" {
		name = boundRunes(c.SessionID, 8)
	}
	w := SubagentPrefix + name
	if c.WaitingOn != "" {
		w += ": " + c.WaitingOn
	}
	return boundRunes(w, MaxWaitingOnChars)
}
