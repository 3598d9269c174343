package presence

import (
	"slices"
	"sort"
	"time"
)

// MaxClaims bounds the claim set a state keeps; older claims stay in the
// ledger.
const MaxClaims = 1024

// Step is the one transition reducer: the state after e, given s. Step never
// looks at the clock; elapsed time changes nothing. Callers that project
// live must call Step only for an event that sorts after s's last event
// (InOrder), and otherwise fold the session again. Step never writes into
// memory that s shares with the caller's copy of it.
func Step(s State, e *Event) State {
	if e.Type == TypeClaimWrite {
		// addClaims inserts in place when there is spare capacity; the
		// caller's copy of s must keep its claims.
		s.Claims = slices.Clip(s.Claims)
	}
	step(&s, e)
	return s
}

// step applies e to s in place. Fold owns its state and calls it directly.
func step(s *State, e *Event) {
	s.Events++
	if s.SessionID == "" {
		s.SessionID = e.SessionID
	}
	if s.ParentSessionID == "" {
		s.ParentSessionID = e.ParentSessionID
	}
	if s.Agent == "" {
		s.Agent = e.Agent
	}
	if s.Node == "" {
		s.Node = e.Node
	}
	if s.Activity == "" {
		s.Activity = ActivityUnknown
	}
	if s.TaskState == "" {
		s.TaskState = TaskActive
	}
	if s.StartedAt.IsZero() || e.TS.Before(s.StartedAt) {
		s.StartedAt = e.TS
	}
	if !s.TaskStateDeclared {
		// The compatibility default: active since the session began.
		s.TaskStateUpdatedAt = s.StartedAt
	}
	if e.TS.After(s.LastEventAt) {
		s.LastEventAt = e.TS
	}
	s.LastTS, s.LastID = e.TS, e.ID
	if len(e.Attrs) > 0 {
		stepAttrs(s, e)
	}

	switch e.Type {
	case TypeSessionStart, TypeSubagentStart:
		s.reopen()
		s.setActivity(ActivityIdle, e)
		s.OpenTurn, s.PendingRequests = false, nil
	case TypeUserPromptSubmit, TypeToolPreUse:
		s.reopen()
		s.setActivity(ActivityWorking, e)
		s.OpenTurn, s.PendingRequests = true, nil
	case TypeCommandStart:
		if s.OpenTurn && !s.Ended {
			s.setActivity(ActivityWorking, e)
			s.PendingRequests = nil
		}
	case TypeInputRequested:
		s.reopen()
		if s.Activity != ActivityNeedsInput {
			s.PendingRequests = nil
		}
		s.PendingRequests = addPending(s.PendingRequests, e.AttrString(AttrRequestKey))
		s.setActivity(ActivityNeedsInput, e)
		s.OpenTurn = true
	case TypeInputResolved:
		if s.Activity == ActivityNeedsInput {
			var matched bool
			s.PendingRequests, matched = resolvePending(s.PendingRequests, e.AttrString(AttrRequestKey))
			if matched && len(s.PendingRequests) == 0 {
				s.setActivity(ActivityWorking, e)
			}
		}
	case TypeTurnStop:
		s.setActivity(ActivityIdle, e)
		s.OpenTurn, s.PendingRequests = false, nil
	case TypeSessionEnd, TypeSubagentStop:
		s.setActivity(ActivityIdle, e)
		s.OpenTurn, s.PendingRequests = false, nil
		s.Ended, s.EndedAt = true, e.TS
		s.EndReason = e.AttrString(AttrReason)
	case TypeTaskState:
		stepTaskState(s, e)
	case TypeTaskSet:
		s.Task = e.AttrString(AttrTask)
	case TypeClaimWrite:
		s.Claims = addClaims(s.Claims, e.AttrStrings(AttrPaths))
	}
}

func stepAttrs(s *State, e *Event) {
	if s.Name == "" {
		if n := e.AttrString(AttrSessionName); n != "" {
			s.Name = n
		}
	}
	if pid, ok := attrInt(e.Attrs[AttrAgentPID]); ok && pid > 0 {
		s.AgentPID = int(pid)
		st, _ := attrInt(e.Attrs[AttrAgentStart])
		s.AgentPIDStart = uint64(st)
	}
	if c := e.AttrString(AttrCwd); c != "" {
		s.Cwd = c
	}
}

func attrInt(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		return int64(x), true
	case int:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		return int64(x), true
	}
	return 0, false
}

// stepTaskState applies a lifecycle event. What a declaration would refuse
// and the events alone can show (a subagent's declaration, blocked without a
// reason, an unknown state) changes nothing; repeating the same state and
// reason changes nothing.
func stepTaskState(s *State, e *Event) {
	if s.IsSubagent() {
		return
	}
	ts := TaskState(e.AttrString(AttrTaskState))
	reason := e.AttrString(AttrReason)
	switch ts {
	case TaskActive, TaskDone:
	case TaskBlocked:
		if reason == "" {
			return
		}
	default:
		return
	}
	if ts == s.TaskState && reason == s.LifecycleReason {
		return
	}
	s.TaskState, s.TaskStateUpdatedAt, s.LifecycleReason = ts, e.TS, reason
	s.TaskStateDeclared = true
	s.BlockerReason = ""
	if ts == TaskBlocked {
		s.BlockerReason = reason
	}
	if n := e.AttrString(AttrSuggestedName); n != "" {
		s.SuggestedSessionName = n
	}
}

func (s *State) setActivity(a Activity, e *Event) {
	s.Activity, s.ActivityUpdatedAt, s.ActivitySource = a, e.TS, e.Type
}

func (s *State) reopen() {
	if s.Ended {
		s.Ended, s.EndedAt, s.EndReason = false, time.Time{}, ""
	}
}

// MaxPending bounds the operator prompts a state tracks at once.
const MaxPending = 16

// addPending records an open operator prompt. A keyless prompt is recorded
// as "" (any resolution clears it).
func addPending(have []string, key string) []string {
	i, found := slices.BinarySearch(have, key)
	if found || len(have) >= MaxPending {
		return have
	}
	return slices.Insert(slices.Clip(have), i, key)
}

// resolvePending removes what a resolution with key answers: the prompt
// with the same key and any keyless prompt; a keyless resolution answers
// every prompt. matched reports whether anything was answered.
func resolvePending(have []string, key string) ([]string, bool) {
	if key == "" {
		return nil, len(have) > 0
	}
	out := make([]string, 0, len(have))
	matched := false
	for _, k := range have {
		if k == key || k == "" {
			matched = true
			continue
		}
		out = append(out, k)
	}
	if len(have) == 0 {
		// needs_input with nothing recorded (an older state): any
		// resolution is progress evidence.
		return nil, true
	}
	if len(out) == 0 {
		out = nil
	}
	return out, matched
}

func addClaims(have, add []string) []string {
	for _, p := range add {
		if p == "" {
			continue
		}
		i, found := slices.BinarySearch(have, p)
		if found {
			continue
		}
		if len(have) >= MaxClaims {
			break
		}
		have = slices.Insert(have, i, p)
	}
	return have
}

// InOrder reports whether e sorts after the last event folded into s, so
// that Step(s, e) equals a fold of the whole set.
func InOrder(s *State, e *Event) bool {
	if s.Events == 0 {
		return true
	}
	if !e.TS.Equal(s.LastTS) {
		return e.TS.After(s.LastTS)
	}
	return e.ID > s.LastID
}

// Fold is the public foldSessionState: the state of one session from its
// events, in any order. It sorts evs in place by (ts, id) and ignores an
// event whose id it has already folded.
func Fold(evs []Event) State {
	if len(evs) == 0 {
		return NewState("")
	}
	if !sort.SliceIsSorted(evs, func(i, j int) bool { return Less(&evs[i], &evs[j]) }) {
		SortEvents(evs)
	}
	s := NewState(evs[0].SessionID)
	var seen map[string]struct{}
	if len(evs) > 1 {
		seen = make(map[string]struct{}, len(evs))
	}
	for i := range evs {
		e := &evs[i]
		if e.ID != "" && seen != nil {
			if _, dup := seen[e.ID]; dup {
				continue
			}
			seen[e.ID] = struct{}{}
		}
		step(&s, e)
	}
	return s
}
