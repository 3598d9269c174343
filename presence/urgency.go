package presence

import (
	"strings"
	"time"
)

// Urgency is how soon a session wants the operator: the roster's first
// sort key. A smaller value is more urgent.
type Urgency int

// Urgency classes, most urgent first.
const (
	// UrgencyNeedsInput: the agent waits on the operator now.
	UrgencyNeedsInput Urgency = iota
	// UrgencyBlocked: the declared task is blocked (and the agent is not
	// waiting on a prompt).
	UrgencyBlocked
	// UrgencyWorking: a turn is in progress.
	UrgencyWorking
	// UrgencyIdle: no open turn.
	UrgencyIdle
	// UrgencyUnknown: no activity evidence yet.
	UrgencyUnknown
	// UrgencyEnded: the session is over (only listed with --all).
	UrgencyEnded
)

// String names the class as the roster shows it.
func (u Urgency) String() string {
	switch u {
	case UrgencyNeedsInput:
		return "needs_input"
	case UrgencyBlocked:
		return "blocked"
	case UrgencyWorking:
		return "working"
	case UrgencyIdle:
		return "idle"
	case UrgencyEnded:
		return "ended"
	}
	return "unknown"
}

// UrgencyKey is what the urgency order reads of a session. Any surface
// (the CLI's roster, the web board) builds one per row and sorts with
// CompareUrgency.
type UrgencyKey struct {
	SessionID          string
	Activity           Activity
	TaskState          TaskState
	Ended              bool
	ActivityUpdatedAt  time.Time
	TaskStateUpdatedAt time.Time
}

// UrgencyKey is the session's key for the urgency order.
func (s *State) UrgencyKey() UrgencyKey {
	return UrgencyKey{SessionID: s.SessionID, Activity: s.Activity, TaskState: s.TaskState,
		Ended: s.Ended, ActivityUpdatedAt: s.ActivityUpdatedAt, TaskStateUpdatedAt: s.TaskStateUpdatedAt}
}

// Class is the key's urgency class. needs_input wins over blocked: an
// agent that waits on a prompt needs the operator now, whatever its task
// state. An activity value this version does not know counts as unknown.
func (k UrgencyKey) Class() Urgency {
	switch {
	case k.Ended:
		return UrgencyEnded
	case k.Activity == ActivityNeedsInput:
		return UrgencyNeedsInput
	case k.TaskState == TaskBlocked:
		return UrgencyBlocked
	case k.Activity == ActivityWorking:
		return UrgencyWorking
	case k.Activity == ActivityIdle:
		return UrgencyIdle
	}
	return UrgencyUnknown
}

// Since is when the key's wait began: the task state's time for a blocked
// session, the activity's time otherwise.
func (k UrgencyKey) Since() time.Time {
	if k.Class() == UrgencyBlocked {
		return k.TaskStateUpdatedAt
	}
	return k.ActivityUpdatedAt
}

// UrgencyRank is a key reduced to what the order compares: its class,
// the start of its wait, and its id. A surface that sorts many rows
// computes each row's rank once and sorts with CompareUrgencyRank.
type UrgencyRank struct {
	Class     Urgency
	Since     time.Time
	SessionID string
}

// Rank is the key's UrgencyRank.
func (k UrgencyKey) Rank() UrgencyRank {
	c := k.Class()
	since := k.ActivityUpdatedAt
	if c == UrgencyBlocked {
		since = k.TaskStateUpdatedAt
	}
	return UrgencyRank{Class: c, Since: since, SessionID: k.SessionID}
}

// CompareUrgency orders two sessions for the roster: by class (needs
// input, blocked, working, idle, unknown, ended), then the oldest wait
// first (a session whose wait has no known start goes after those that
// have one), then by session id. It returns a negative number when a
// comes first, a positive one when b does, and 0 only for equal ids of
// the same class and wait; it is a strict weak order, so it suits
// slices.SortFunc and sort.Slice.
func CompareUrgency(a, b UrgencyKey) int { return CompareUrgencyRank(a.Rank(), b.Rank()) }

// CompareUrgencyRank is CompareUrgency over precomputed ranks.
func CompareUrgencyRank(a, b UrgencyRank) int {
	if a.Class != b.Class {
		if a.Class < b.Class {
			return -1
		}
		return 1
	}
	if za, zb := a.Since.IsZero(), b.Since.IsZero(); za != zb {
		if zb {
			return -1
		}
		return 1
	}
	if c := a.Since.Compare(b.Since); c != 0 {
		return c
	}
	return strings.Compare(a.SessionID, b.SessionID)
}
