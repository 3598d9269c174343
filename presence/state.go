package presence

import (
	"strings"
	"time"
)

// Activity answers "what is the agent doing now?".
type Activity string

// Activity values.
const (
	ActivityUnknown    Activity = "unknown"
	ActivityWorking    Activity = "working"
	ActivityNeedsInput Activity = "needs_input"
	ActivityIdle       Activity = "idle"
)

// TaskState answers "is the declared task still open?".
type TaskState string

// TaskState values. Active is the compatibility default.
const (
	TaskActive  TaskState = "active"
	TaskBlocked TaskState = "blocked"
	TaskDone    TaskState = "done"
)

// State is a session's folded state: both axes and what the operator surfaces
// show beside them. It is a pure function of the session's event set.
type State struct {
	SessionID       string `json:"session_id"`
	ParentSessionID string `json:"parent_session_id,omitempty"`
	Agent           string `json:"agent,omitempty"`
	Node            string `json:"node,omitempty"`
	Name            string `json:"name,omitempty"`

	Activity Activity `json:"activity"`
	// ActivityUpdatedAt is when activity took its current value; repeated
	// evidence of the same value does not move it. ActivitySource is the
	// type of the event that gave it that value.
	ActivityUpdatedAt time.Time `json:"-"`
	ActivitySource    string    `json:"activity_source,omitempty"`
	// LastEvidenceAt is the time of the latest event that evidences the
	// agent acting (see evidenceTypes), whatever the activity.
	LastEvidenceAt time.Time `json:"-"`
	// WaitingOn, while activity is needs_input, is what the session waits
	// on: a tool and a short safe summary ("Bash: git", "Edit src/app.go")
	// or "question". The wait began at ActivityUpdatedAt.
	WaitingOn string `json:"waiting_on,omitempty"`
	// WaitingChild is set by SurfaceChildren, never by the fold: the
	// subagent session whose input request this top-level session shows.
	WaitingChild string `json:"waiting_child,omitempty"`
	// SilentSince is set by readers (see SilentSince), never by the fold:
	// elapsed time never changes the folded state.
	SilentSince        time.Time `json:"-"`
	TaskState          TaskState `json:"task_state"`
	TaskStateUpdatedAt time.Time `json:"-"`
	BlockerReason      string    `json:"blocker_reason,omitempty"`
	// LifecycleReason is the reason of the last lifecycle change, whatever
	// its state; BlockerReason is set only while blocked.
	LifecycleReason string `json:"lifecycle_reason,omitempty"`

	Task   string   `json:"task,omitempty"`
	Claims []string `json:"claims,omitempty"`
	// PendingClaims are claims the node could not record yet and is
	// retrying: they do not hold until they land.
	PendingClaims        []string `json:"pending_claims,omitempty"`
	SuggestedSessionName string   `json:"suggested_session_name,omitempty"`
	// SessionNameSeenFor is the suggested (or projected) session name the
	// agent was last seen showing (session_name.seen).
	SessionNameSeenFor string `json:"session_name_seen_for,omitempty"`

	StartedAt   time.Time `json:"-"`
	LastEventAt time.Time `json:"-"`
	Ended       bool      `json:"ended"`
	EndedAt     time.Time `json:"-"`
	EndReason   string    `json:"end_reason,omitempty"`

	AgentPID      int    `json:"agent_pid,omitempty"`
	AgentPIDStart uint64 `json:"agent_pid_start,omitempty"`
	Cwd           string `json:"cwd,omitempty"`
	// Repo and Branch are where the session runs, from the repo and branch
	// attributes; Project is what a roster shows.
	Repo   string `json:"repo,omitempty"`
	Branch string `json:"branch,omitempty"`

	Events int `json:"events"`

	// Reducer bookkeeping; exported so that the live projection can
	// persist and resume it, never shown to operators.
	OpenTurn bool `json:"-"`
	// TaskStateDeclared is true once a lifecycle event applied; until then
	// TaskStateUpdatedAt is the session's start.
	TaskStateDeclared bool `json:"-"`
	// PendingRequests are the request keys of open operator prompts
	// ("" for a keyless prompt), sorted.
	PendingRequests []string `json:"-"`
	// OpenCalls are the tool calls begun in the open turn that named
	// their call (tool.pre_use with call_key), each "call_key NUL
	// input_key", oldest first: a permission request that names no call
	// but the same input is that call's.
	OpenCalls []string  `json:"-"`
	LastTS    time.Time `json:"-"`
	LastID    string    `json:"-"`
}

// NewState is the state of a session before any event: activity unknown,
// task active.
func NewState(sessionID string) State {
	return State{SessionID: sessionID, Activity: ActivityUnknown, TaskState: TaskActive}
}

// IsSubagent reports whether the session is a child of another session.
func (s *State) IsSubagent() bool { return s.ParentSessionID != "" }

// Live reports whether the session belongs on the live board.
func (s *State) Live() bool { return !s.Ended }

// Project is the name of what the session works on: its repository's name,
// or the last element of its working directory when the repository is
// unknown.
func (s *State) Project() string {
	if s.Repo != "" {
		return s.Repo
	}
	return baseName(s.Cwd)
}

// baseName is the last element of a slash or backslash separated path,
// whichever system wrote it.
func baseName(p string) string {
	p = strings.TrimRight(p, `/\`)
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// NamePending reports whether a suggested session name exists that the
// agent has not been seen showing: a re-mint the agent still has to show.
func (s *State) NamePending() bool {
	return s.SuggestedSessionName != "" && s.SessionNameSeenFor != s.SuggestedSessionName
}
