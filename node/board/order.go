package board

import (
	"time"

	"github.com/harn-dev/harn/node/api"
)

// Urgency ranks, most urgent first: the order the board and `harn agents
// list` share.
const (
	rankNeedsInput = iota
	rankBlocked
	rankWorking
	rankIdle
	rankUnknown
)

// rank places a row: needs_input first (whatever its lifecycle), then
// blocked, working, idle, and unknown last.
func rank(r Row) int {
	switch {
	case r.GetActivity() == "needs_input":
		return rankNeedsInput
	case r.GetTaskState() == "blocked":
		return rankBlocked
	case r.GetActivity() == "working":
		return rankWorking
	case r.GetActivity() == "idle":
		return rankIdle
	}
	return rankUnknown
}

// waitingSince is when the row entered the state that ranks it: the
// lifecycle time for a blocked row, the activity time otherwise.
func waitingSince(r Row) time.Time {
	if rank(r) == rankBlocked {
		return api.TimeOf(r.GetTaskStateUpdatedAtUnixNano())
	}
	return api.TimeOf(r.GetActivityUpdatedAtUnixNano())
}

// DefaultLess is the board's order when Config.Less is nil: needs_input,
// then blocked, working, idle, unknown; within a rank the oldest wait first
// (a row with no time after those with one); then by machine and session
// id, so the order is total and stable.
func DefaultLess(a, b Row) bool {
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra < rb
	}
	ta, tb := waitingSince(a), waitingSince(b)
	if !ta.Equal(tb) {
		switch {
		case ta.IsZero():
			return false
		case tb.IsZero():
			return true
		}
		return ta.Before(tb)
	}
	if a.GetNode() != b.GetNode() {
		return a.GetNode() < b.GetNode()
	}
	return a.GetSessionId() < b.GetSessionId()
}
