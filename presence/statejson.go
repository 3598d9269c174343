package presence

import (
	"encoding/json"
	"time"
)

// StateJSON is the stable JSON form of State, with the seed's field names
// and timestamps as canonical strings. Embed it to add fields to a State's
// JSON without a second encoding pass.
type StateJSON struct {
	SessionID            string    `json:"session_id"`
	ParentSessionID      string    `json:"parent_session_id,omitempty"`
	Agent                string    `json:"agent,omitempty"`
	Node                 string    `json:"node,omitempty"`
	Name                 string    `json:"name,omitempty"`
	SessionName          string    `json:"session_name,omitempty"`
	Activity             Activity  `json:"activity"`
	ActivityUpdatedAt    string    `json:"activity_updated_at,omitempty"`
	ActivitySource       string    `json:"activity_source,omitempty"`
	LastEvidenceAt       string    `json:"last_evidence_at,omitempty"`
	WaitingOn            string    `json:"waiting_on,omitempty"`
	WaitingChild         string    `json:"waiting_child,omitempty"`
	SilentSince          string    `json:"silent_since,omitempty"`
	TaskState            TaskState `json:"task_state"`
	TaskStateUpdatedAt   string    `json:"task_state_updated_at,omitempty"`
	BlockerReason        string    `json:"blocker_reason,omitempty"`
	LifecycleReason      string    `json:"lifecycle_reason,omitempty"`
	Task                 string    `json:"task,omitempty"`
	Claims               []string  `json:"claims,omitempty"`
	PendingClaims        []string  `json:"pending_claims,omitempty"`
	SuggestedSessionName string    `json:"suggested_session_name,omitempty"`
	SessionNameSeenFor   string    `json:"session_name_seen_for,omitempty"`
	StartedAt            string    `json:"started_at,omitempty"`
	LastEventAt          string    `json:"last_event_at,omitempty"`
	Ended                bool      `json:"ended"`
	EndedAt              string    `json:"ended_at,omitempty"`
	EndReason            string    `json:"end_reason,omitempty"`
	AgentPID             int       `json:"agent_pid,omitempty"`
	AgentPIDStart        uint64    `json:"agent_pid_start,omitempty"`
	Cwd                  string    `json:"cwd,omitempty"`
	Project              string    `json:"project,omitempty"`
	Repo                 string    `json:"repo,omitempty"`
	Branch               string    `json:"branch,omitempty"`
	Events               int       `json:"events"`
	OpenTurn             bool      `json:"open_turn,omitempty"`
	TaskStateDeclared    bool      `json:"task_state_declared,omitempty"`
	PendingRequests      []string  `json:"pending_requests,omitempty"`
	OpenCalls            []string  `json:"open_calls,omitempty"`
	LastTS               string    `json:"last_ts,omitempty"`
	LastID               string    `json:"last_id,omitempty"`
}

// MarshalJSON writes the stable JSON form.
func (s State) MarshalJSON() ([]byte, error) { return json.Marshal(s.JSON()) }

// JSON is the stable JSON form of s as a plain struct.
func (s State) JSON() StateJSON {
	return StateJSON{
		SessionID:            s.SessionID,
		ParentSessionID:      s.ParentSessionID,
		Agent:                s.Agent,
		Node:                 s.Node,
		Name:                 s.Name,
		SessionName:          s.SessionName(),
		Activity:             s.Activity,
		ActivityUpdatedAt:    FormatTime(s.ActivityUpdatedAt),
		ActivitySource:       s.ActivitySource,
		LastEvidenceAt:       FormatTime(s.LastEvidenceAt),
		WaitingOn:            s.WaitingOn,
		WaitingChild:         s.WaitingChild,
		SilentSince:          FormatTime(s.SilentSince),
		TaskState:            s.TaskState,
		TaskStateUpdatedAt:   FormatTime(s.TaskStateUpdatedAt),
		BlockerReason:        s.BlockerReason,
		LifecycleReason:      s.LifecycleReason,
		Task:                 s.Task,
		Claims:               s.Claims,
		PendingClaims:        s.PendingClaims,
		SuggestedSessionName: s.SuggestedSessionName,
		SessionNameSeenFor:   s.SessionNameSeenFor,
		StartedAt:            FormatTime(s.StartedAt),
		LastEventAt:          FormatTime(s.LastEventAt),
		Ended:                s.Ended,
		EndedAt:              FormatTime(s.EndedAt),
		EndReason:            s.EndReason,
		AgentPID:             s.AgentPID,
		AgentPIDStart:        s.AgentPIDStart,
		Cwd:                  s.Cwd,
		Project:              s.Project(),
		Repo:                 s.Repo,
		Branch:               s.Branch,
		Events:               s.Events,
		OpenTurn:             s.OpenTurn,
		TaskStateDeclared:    s.TaskStateDeclared,
		PendingRequests:      s.PendingRequests,
		OpenCalls:            s.OpenCalls,
		LastTS:               FormatTime(s.LastTS),
		LastID:               s.LastID,
	}
}

// UnmarshalJSON reads the stable JSON form.
func (s *State) UnmarshalJSON(b []byte) error {
	var j StateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	pt := func(v string) time.Time {
		t, _ := ParseTime(v)
		return t
	}
	*s = State{
		SessionID:            j.SessionID,
		ParentSessionID:      j.ParentSessionID,
		Agent:                j.Agent,
		Node:                 j.Node,
		Name:                 j.Name,
		Activity:             j.Activity,
		ActivityUpdatedAt:    pt(j.ActivityUpdatedAt),
		ActivitySource:       j.ActivitySource,
		LastEvidenceAt:       pt(j.LastEvidenceAt),
		WaitingOn:            j.WaitingOn,
		WaitingChild:         j.WaitingChild,
		SilentSince:          pt(j.SilentSince),
		TaskState:            j.TaskState,
		TaskStateUpdatedAt:   pt(j.TaskStateUpdatedAt),
		BlockerReason:        j.BlockerReason,
		LifecycleReason:      j.LifecycleReason,
		Task:                 j.Task,
		Claims:               j.Claims,
		PendingClaims:        j.PendingClaims,
		SuggestedSessionName: j.SuggestedSessionName,
		SessionNameSeenFor:   j.SessionNameSeenFor,
		StartedAt:            pt(j.StartedAt),
		LastEventAt:          pt(j.LastEventAt),
		Ended:                j.Ended,
		EndedAt:              pt(j.EndedAt),
		EndReason:            j.EndReason,
		AgentPID:             j.AgentPID,
		AgentPIDStart:        j.AgentPIDStart,
		Cwd:                  j.Cwd,
		Repo:                 j.Repo, // project is derived: Repo, or the cwd's base name
		Branch:               j.Branch,
		Events:               j.Events,
		OpenTurn:             j.OpenTurn,
		TaskStateDeclared:    j.TaskStateDeclared,
		PendingRequests:      j.PendingRequests,
		OpenCalls:            j.OpenCalls,
		LastTS:               pt(j.LastTS),
		LastID:               j.LastID,
	}
	// An older heartbeat may lack an axis: the seed's compatibility
	// defaults, as NewState gives them.
	if s.Activity == "" {
		s.Activity = ActivityUnknown
	}
	if s.TaskState == "" {
		s.TaskState = TaskActive
	}
	return nil
}
