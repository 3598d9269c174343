package presence

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Lifecycle refusals. A refusal writes no event.
var (
	ErrReasonRequired = errors.New("blocked requires a reason; pass --reason")
	ErrSubagent       = errors.New("only top-level human-facing sessions may declare lifecycle; this is a subagent session")
	ErrNoTask         = errors.New("done requires a current task; set one with `harn agents set-task`")
	ErrUnknownState   = errors.New("unknown task state; use active, blocked or done")
	ErrReasonTooLong  = fmt.Errorf("reason is longer than %d characters", MaxReasonChars)
)

// Declaration is the outcome of checking a lifecycle declaration against a
// session's state, before any I/O check (git) runs.
type Declaration struct {
	// Noop is true when the declaration repeats the current state and
	// reason: nothing is recorded.
	Noop bool
	// Attrs are the attributes of the state.task_state event to record.
	Attrs map[string]any
}

// Declare checks the lifecycle rules that the state alone decides and, when
// they pass, returns the attributes of the event to record. The caller runs
// the git finalization check for done before recording.
func Declare(s *State, to TaskState, reason string) (Declaration, error) {
	noop, err := checkDeclaration(s, to, reason)
	if err != nil {
		return Declaration{}, err
	}
	if noop {
		return Declaration{Noop: true}, nil
	}
	attrs := map[string]any{AttrTaskState: string(to)}
	if reason != "" {
		attrs[AttrReason] = reason
	}
	name := ProjectName(s.Name, s.Task, to)
	attrs[AttrSuggestedName] = name
	if name != s.SessionName() {
		attrs[AttrNameReminted] = true
	}
	return Declaration{Attrs: attrs}, nil
}

// checkDeclaration is the one rule set of a lifecycle change, shared by
// Declare (before anything is written) and the fold (which ignores a
// state.task_state event that Declare would have refused). noop reports a
// declaration that repeats the current state and reason.
func checkDeclaration(s *State, to TaskState, reason string) (noop bool, err error) {
	switch to {
	case TaskActive, TaskBlocked, TaskDone:
	default:
		return false, ErrUnknownState
	}
	if s.IsSubagent() {
		return false, ErrSubagent
	}
	if utf8.RuneCountInString(reason) > MaxReasonChars {
		return false, ErrReasonTooLong
	}
	if to == TaskBlocked && strings.TrimSpace(reason) == "" {
		return false, ErrReasonRequired
	}
	if to == s.TaskState && reason == s.LifecycleReason {
		return true, nil
	}
	if to == TaskDone && strings.TrimSpace(s.Task) == "" {
		return false, ErrNoTask
	}
	return false, nil
}

// ProjectName is the human-facing session name for a lifecycle state.
func ProjectName(name, task string, ts TaskState) string {
	base := "Agent"
	if name != "" {
		base += " " + name
	}
	if task != "" {
		base += " - " + task
	}
	switch ts {
	case TaskBlocked:
		return "[BLOCKED] - " + base
	case TaskDone:
		return "[DONE] - " + base
	}
	return base
}

// SessionName is the session's current projected name.
func (s *State) SessionName() string {
	if s.Name == "" {
		return ""
	}
	return ProjectName(s.Name, s.Task, s.TaskState)
}

// MaxHashedReason bounds the blocker reason that the presence hash covers.
const MaxHashedReason = 200

// PresenceHash covers what other machines must see change: task, claims,
// activity and what it waits on, lifecycle, the bounded blocker reason,
// name, repository and branch, and end. It covers
// no timestamp, so elapsed time never looks like a change.
func PresenceHash(s *State) string {
	h := sha256.New()
	w := func(v string) {
		var n [4]byte
		l := len(v)
		n[0], n[1], n[2], n[3] = byte(l>>24), byte(l>>16), byte(l>>8), byte(l)
		h.Write(n[:])
		h.Write([]byte(v))
	}
	w(s.SessionID)
	w(s.Name)
	w(s.Task)
	w(string(s.Activity))
	w(string(s.TaskState))
	w(boundRunes(s.BlockerReason, MaxHashedReason))
	w(s.WaitingOn)
	w(s.Repo)
	w(s.Branch)
	if s.Ended {
		w("ended")
	} else {
		w("live")
	}
	for _, c := range s.Claims {
		w(c)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func boundRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}
