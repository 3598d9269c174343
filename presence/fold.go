package presence

import (
	"slices"
	"sort"
	"strings"
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
	if e.Type == TypeClaimWrite || e.Type == TypeClaimPending || e.Type == TypeClaimRelease {
		// addClaims inserts in place when there is spare capacity; the
		// caller's copy of s must keep its claims.
		s.Claims = slices.Clip(s.Claims)
		s.PendingClaims = slices.Clip(s.PendingClaims)
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

	if evidenceTypes[e.Type] && e.TS.After(s.LastEvidenceAt) {
		s.LastEvidenceAt = e.TS
	}

	switch e.Type {
	case TypeSessionStart, TypeSubagentStart:
		s.reopen()
		s.setActivity(ActivityIdle, e)
		s.OpenTurn, s.PendingRequests, s.OpenCalls = false, nil, nil
	case TypeUserPromptSubmit, TypeToolPreUse:
		s.reopen()
		s.setActivity(ActivityWorking, e)
		s.OpenTurn, s.PendingRequests = true, nil
		if e.Type == TypeToolPreUse {
			s.OpenCalls = openCall(s.OpenCalls, e)
		}
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
		var added bool
		s.PendingRequests, added = addPending(s.PendingRequests, requestEntry(s.OpenCalls, e))
		s.setActivity(ActivityNeedsInput, e)
		if added || s.WaitingOn == "" {
			s.WaitingOn = waitingOn(e)
		}
		s.OpenTurn = true
	case TypeInputResolved:
		if s.Activity == ActivityNeedsInput {
			var matched bool
			s.PendingRequests, matched = resolvePending(s.PendingRequests, keysOf(e))
			if matched && len(s.PendingRequests) == 0 {
				s.setActivity(ActivityWorking, e)
			}
		}
		s.OpenCalls = closeCall(s.OpenCalls, e.AttrString(AttrCallKey))
	case TypeTurnStop:
		s.setActivity(ActivityIdle, e)
		s.OpenTurn, s.PendingRequests, s.OpenCalls = false, nil, nil
	case TypeSessionEnd, TypeSubagentStop:
		s.setActivity(ActivityIdle, e)
		s.OpenTurn, s.PendingRequests, s.OpenCalls = false, nil, nil
		s.Ended, s.EndedAt = true, e.TS
		s.EndReason = e.AttrString(AttrReason)
	case TypeTaskState:
		stepTaskState(s, e)
	case TypeTaskSet:
		s.Task = e.AttrString(AttrTask)
	case TypeClaimWrite:
		ps := e.AttrStrings(AttrPaths)
		s.Claims = addClaims(s.Claims, ps)
		s.PendingClaims = dropClaims(s.PendingClaims, ps)
	case TypeClaimPending:
		ps := e.AttrStrings(AttrPaths)
		s.Claims = dropClaims(s.Claims, ps)
		s.PendingClaims = addClaims(s.PendingClaims, ps)
	case TypeClaimRelease:
		ps := e.AttrStrings(AttrPaths)
		s.Claims = dropClaims(s.Claims, ps)
		s.PendingClaims = dropClaims(s.PendingClaims, ps)
	case TypeSessionNameSeen:
		// Only this session's own name counts: agents also quote the names
		// of their peers.
		if n := e.AttrString(AttrName); n != "" && (n == s.SuggestedSessionName || n == s.SessionName()) {
			s.SessionNameSeenFor = n
		}
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
	if r := e.AttrString(AttrRepo); r != "" {
		s.Repo = r
	}
	if b := e.AttrString(AttrBranch); b != "" {
		s.Branch = b
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

// stepTaskState applies a lifecycle event. The fold refuses exactly what
// Declare refuses (checkDeclaration is their one rule set): a subagent's
// declaration, blocked without a reason, done without a task, an unknown
// state, an overlong reason; repeating the same state and reason changes
// nothing.
func stepTaskState(s *State, e *Event) {
	ts := TaskState(e.AttrString(AttrTaskState))
	reason := e.AttrString(AttrReason)
	if noop, err := checkDeclaration(s, ts, reason); noop || err != nil {
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

// setActivity gives activity the value a on the evidence e. Evidence of
// the value it already has moves nothing: activity_updated_at is when the
// current value began.
func (s *State) setActivity(a Activity, e *Event) {
	if a != ActivityNeedsInput {
		s.WaitingOn = ""
	}
	if s.Activity == a && !s.ActivityUpdatedAt.IsZero() {
		return
	}
	s.Activity, s.ActivityUpdatedAt, s.ActivitySource = a, e.TS, e.Type
}

// Waiting-on summaries.
const (
	// WaitingQuestion is what a request that names no tool waits on: an
	// elicitation, a question, a prompt known only from a notification.
	WaitingQuestion = "question"
	// MaxWaitingOnChars bounds WaitingOn.
	MaxWaitingOnChars = 160
)

// waitingOn is what the input request e waits on: its summary, else its
// tool, else a question.
func waitingOn(e *Event) string {
	w := e.AttrString(AttrSummary)
	if w == "" {
		w = e.AttrString(AttrTool)
	}
	if w == "" {
		return WaitingQuestion
	}
	return boundRunes(w, MaxWaitingOnChars)
}

func (s *State) reopen() {
	if s.Ended {
		s.Ended, s.EndedAt, s.EndReason = false, time.Time{}, ""
	}
}

// MaxPending bounds the operator prompts a state tracks at once.
const MaxPending = 16

// A pending entry and a resolution name a request by up to three keys:
// its call (call_key), its input's digest (input_key) and the key it was
// given (request_key). An entry is the keys joined by NUL in that order,
// or request_key alone when it is the only one; the keyless prompt is "".
type reqKeys struct{ call, input, req string }

func keysOf(e *Event) reqKeys {
	return reqKeys{e.AttrString(AttrCallKey), e.AttrString(AttrInputKey), e.AttrString(AttrRequestKey)}
}

func (k reqKeys) empty() bool { return k.call == "" && k.input == "" && k.req == "" }

func (k reqKeys) entry() string {
	if k.call == "" && k.input == "" {
		return k.req // "" for the keyless prompt
	}
	return k.call + "\x00" + k.input + "\x00" + k.req
}

func parseEntry(s string) reqKeys {
	if !strings.Contains(s, "\x00") {
		return reqKeys{req: s} // a key recorded before entries had parts
	}
	f := strings.SplitN(s, "\x00", 3)
	for len(f) < 3 {
		f = append(f, "")
	}
	return reqKeys{f[0], f[1], f[2]}
}

// answers reports whether a resolution with keys r answers the request
// with keys k: by call when both name their call (an equal input of
// another call is not this one), else by any key they share.
func (r reqKeys) answers(k reqKeys) bool {
	if r.call != "" && k.call != "" {
		return r.call == k.call
	}
	for _, a := range []string{r.call, r.input, r.req} {
		if a != "" && (a == k.call || a == k.input || a == k.req) {
			return true
		}
	}
	return false
}

// requestEntry is the pending entry of the input request e: its keys,
// and, when it names no call, the call begun in this turn with the same
// input (Claude Code's PermissionRequest carries no tool_use_id; its
// PreToolUse does).
func requestEntry(open []string, e *Event) string {
	k := keysOf(e)
	if k.call == "" && k.input != "" {
		for i := len(open) - 1; i >= 0; i-- {
			if call, input, _ := strings.Cut(open[i], "\x00"); input == k.input {
				k.call = call
				break
			}
		}
	}
	return k.entry()
}

// MaxOpenCalls bounds the calls a state remembers in one turn.
const MaxOpenCalls = 16

// openCall records the call the tool.pre_use e begins, when it names it.
func openCall(have []string, e *Event) []string {
	call, input := e.AttrString(AttrCallKey), e.AttrString(AttrInputKey)
	if call == "" {
		return have
	}
	c := call + "\x00" + input
	out := make([]string, 0, min(len(have)+1, MaxOpenCalls))
	for _, h := range have {
		if h != c {
			out = append(out, h)
		}
	}
	out = append(out, c)
	if len(out) > MaxOpenCalls {
		out = out[len(out)-MaxOpenCalls:]
	}
	return out
}

// closeCall forgets the call a resolution names.
func closeCall(have []string, call string) []string {
	if call == "" || len(have) == 0 {
		return have
	}
	var out []string
	for _, h := range have {
		if c, _, _ := strings.Cut(h, "\x00"); c != call {
			out = append(out, h)
		}
	}
	return out
}

// addPending records an open operator prompt and reports whether it is a
// new one. A keyless prompt is recorded as "" and only while no keyed
// prompt is known: a keyless request beside a keyed one is that prompt's
// notification (Claude Code's permission_prompt after a PermissionRequest),
// and a keyed request names a keyless prompt already recorded.
func addPending(have []string, key string) ([]string, bool) {
	if key == "" {
		if len(have) > 0 {
			return have, false
		}
		return []string{""}, true
	}
	if len(have) == 1 && have[0] == "" {
		return []string{key}, true
	}
	i, found := slices.BinarySearch(have, key)
	if found || len(have) >= MaxPending {
		return have, false
	}
	return slices.Insert(slices.Clip(have), i, key), true
}

// resolvePending removes what a resolution with keys r answers: the
// prompts it names only (answers). A keyless prompt is not answered by a
// keyed resolution (a tool finishing says nothing of it); it waits for
// progress evidence or a stop. A keyless resolution (the operator
// answered, without saying what) answers every prompt. matched reports
// whether anything was answered.
func resolvePending(have []string, r reqKeys) ([]string, bool) {
	if r.empty() {
		return nil, len(have) > 0
	}
	if len(have) == 0 {
		// needs_input with nothing recorded (an older state): any
		// resolution is progress evidence.
		return nil, true
	}
	var out []string
	matched := false
	for _, h := range have {
		if h != "" && r.answers(parseEntry(h)) {
			matched = true
			continue
		}
		out = append(out, h)
	}
	if !matched {
		return have, false
	}
	return out, true
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

// dropClaims returns have (sorted) without drop. It never writes into
// have's memory, which the caller's copy of a state may share.
func dropClaims(have, drop []string) []string {
	var out []string
	changed := false
	for _, p := range have {
		if slices.Contains(drop, p) {
			changed = true
			continue
		}
		out = append(out, p)
	}
	if !changed {
		return have
	}
	return out
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
