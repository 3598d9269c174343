package presence

import (
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

	Activity           Activity  `json:"activity"`
	ActivityUpdatedAt  time.Time `json:"-"`
	ActivitySource     string    `json:"activity_source,omitempty"`
	TaskState          TaskState `json:"task_state"`
	TaskStateUpdatedAt time.Time `json:"-"`
	BlockerReason      string    `json:"blocker_reason,omitempty"`
	// LifecycleReason is the reason of the last lifecycle change, whatever
	// its state; BlockerReason is set only while blocked.
	LifecycleReason string `json:"lifecycle_reason,omitempty"`

	Task                 string   `json:"task,omitempty"`
	Claims               []string `json:"claims,omitempty"`
	SuggestedSessionName string   `json:"suggested_session_name,omitempty"`

	StartedAt   time.Time `json:"-"`
	LastEventAt time.Time `json:"-"`
	Ended       bool      `json:"ended"`
	EndedAt     time.Time `json:"-"`
	EndReason   string    `json:"end_reason,omitempty"`

	AgentPID      int    `json:"agent_pid,omitempty"`
	AgentPIDStart uint64 `json:"agent_pid_start,omitempty"`
	Cwd           string `json:"cwd,omitempty"`

	Events int `json:"events"`

	// Reducer bookkeeping; exported so that the live projection can
	// persist and resume it, never shown to operators.
	OpenTurn bool `json:"-"`
	// TaskStateDeclared is true once a lifecycle event applied; until then
	// TaskStateUpdatedAt is the session's start.
	TaskStateDeclared bool `json:"-"`
	// PendingRequests are the request keys of open operator prompts
	// ("" for a keyless prompt), sorted.
	PendingRequests []string  `json:"-"`
	LastTS          time.Time `json:"-"`
	LastID          string    `json:"-"`
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
