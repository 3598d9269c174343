package notify

import (
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
)

// Kind names a transition worth telling. The values are the `--on` names.
type Kind string

// The transitions. Each is a state that began to hold.
const (
	// KindNeedsInput: the session's activity became needs_input.
	KindNeedsInput Kind = "needs_input"
	// KindBlocked: the session's task_state became blocked (with a reason).
	KindBlocked Kind = "blocked"
	// KindDone: the session's task_state became done.
	KindDone Kind = "done"
	// KindUnreachable: the node owning the session became unreachable.
	KindUnreachable Kind = "unreachable"
	// KindSilent: the session became silent (silent_since became set).
	KindSilent Kind = "silent"
)

// Kinds lists every kind, in the order Diff reports them.
var Kinds = []Kind{KindNeedsInput, KindBlocked, KindDone, KindUnreachable, KindSilent}

// Session is one session as the engine sees it: its roster row (the one
// form of a row, api.SessionRow; the node fills it from its roster) and
// what a message adds: the board link and the open permission request.
// Every text of the row may come from an agent and is untrusted (it is
// sanitized when a message is rendered). The engine keeps the rows it is
// given until the next Observe: a caller hands it rows it no longer
// changes.
type Session struct {
	*api.SessionRow
	// Link is the session's page on the board (no token in it), when the
	// node has a board.
	Link string
	// Permission is the permission request the session waits on, when one
	// is open on its node.
	Permission *Permission
}

// Permission is a call that waits for an operator, as a message tells
// it: its id (for `harn agents approve ID`), its kind (permission, or a
// harn task's confirmation), the tool, the safe summary (the program or a
// file's base name), and what it asks in full, read from the call's own
// input: Detail (one line), the whole command (CommandCut: cut at its
// bound) and its cwd, a write's file and diff (DiffCut), and since when it
// waits. Only the json format carries the call in full.
type Permission struct {
	ID, Kind, Tool, Summary, Detail string
	Command, Cwd, Path, Diff        string
	CommandCut, DiffCut             bool
	Opened                          time.Time
}

// SessionOf is a roster row as the engine sees it.
func SessionOf(r *api.SessionRow) Session { return Session{SessionRow: r} }

// Transition is one state that began to hold for one session.
type Transition struct {
	Kind    Kind
	Session Session
	// At is when the state began to hold, as the engine observed it. Diff
	// leaves it zero.
	At time.Time
	// Actions are the buttons of a needs_input message with an open
	// permission request (Config.Actions made them); only the ntfy format
	// carries them.
	Actions []Action
}

// Action is a button of a message that makes an HTTP request when
// pressed: ntfy's "http" action. Its headers and body carry a secret
// (a one-decision token), so it goes only into the ntfy format.
type Action struct {
	Label   string
	URL     string
	Method  string
	Headers map[string]string
	Body    string
}

// Holds reports whether the state named by k holds in s.
func Holds(s Session, k Kind) bool {
	switch k {
	case KindNeedsInput:
		return s.GetActivity() == string(presence.ActivityNeedsInput)
	case KindBlocked:
		return s.GetTaskState() == string(presence.TaskBlocked)
	case KindDone:
		return s.GetTaskState() == string(presence.TaskDone)
	case KindUnreachable:
		return !s.GetReachable()
	case KindSilent:
		return s.GetSilentSinceUnixNano() != 0
	}
	return false
}

// Diff returns the transitions from prev to cur of one session: each kind
// whose state holds in cur and did not hold in prev, once, in the order of
// Kinds. A nil prev means the session was not seen before, so every state
// that holds in cur is reported. Diff is pure.
//
// Only the start of a state is a transition: a blocked task whose reason
// changes, or a silent session whose silent_since moves, reports nothing.
func Diff(prev *Session, cur Session) []Transition {
	var out []Transition
	for _, k := range Kinds {
		if Holds(cur, k) && (prev == nil || !Holds(*prev, k)) {
			out = append(out, Transition{Kind: k, Session: cur})
		}
	}
	return out
}
