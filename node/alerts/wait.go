package alerts

import (
	"errors"
	"fmt"
	"strings"

	"github.com/harn-dev/harn/presence"
)

// WaitFor names a state `harn agents wait --for` waits for.
type WaitFor string

// The states a wait can wait for.
const (
	WaitNeedsInput WaitFor = "needs_input" // activity needs_input
	WaitIdle       WaitFor = "idle"        // activity idle
	WaitDone       WaitFor = "done"        // task_state done
	WaitBlocked    WaitFor = "blocked"     // task_state blocked
)

// WaitFors lists them in the order help text shows them.
var WaitFors = []WaitFor{WaitNeedsInput, WaitIdle, WaitDone, WaitBlocked}

// ErrWaitFor: --for names no state a wait knows.
var ErrWaitFor = errors.New("alerts: --for names no state")

// ParseWaitFor parses a --for value.
func ParseWaitFor(s string) (WaitFor, error) {
	w := WaitFor(strings.ToLower(strings.TrimSpace(s)))
	for _, k := range WaitFors {
		if w == k {
			return w, nil
		}
	}
	if s == "" {
		return "", fmt.Errorf("%w: --for is required; use needs_input, idle, done or blocked", ErrWaitFor)
	}
	return "", fmt.Errorf("%w: %q; use needs_input, idle, done or blocked", ErrWaitFor, s)
}

// Holds reports whether st is in the state, as `harn agents list` shows
// it (call it on states that went through presence.SurfaceChildren).
func (w WaitFor) Holds(st *presence.State) bool {
	switch w {
	case WaitNeedsInput:
		return st.Activity == presence.ActivityNeedsInput
	case WaitIdle:
		return st.Activity == presence.ActivityIdle
	case WaitDone:
		return st.TaskState == presence.TaskDone
	case WaitBlocked:
		return st.TaskState == presence.TaskBlocked
	}
	return false
}

// Never reports whether a session can no longer come to the state: it
// ended without being in it.
func (w WaitFor) Never(st *presence.State) bool { return st.Ended && !w.Holds(st) }
