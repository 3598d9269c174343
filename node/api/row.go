package api

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/harn-dev/harn/presence"
)

// The roster row (SessionRow) is the one form of a session that readers
// see. RowOf and (*SessionRow).State are its two conversions, JSON its one
// JSON form (`harn agents list --json`, `agents show --json`, the board's
// JSON, webhook payloads). row_test.go fails when a field of
// presence.State reaches none of them.

// UnixNano is t as a row's time: Unix nanoseconds, 0 for the zero time.
// A time outside what int64 nanoseconds can hold is clamped.
func UnixNano(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// TimeOf is a row's time as a time.Time (UTC): 0 is the zero time.
func TimeOf(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// RowOf is the row of a session state. The roster's own fields
// (reachable, source, harn task) are the caller's to set.
func RowOf(s *presence.State) *SessionRow {
	return &SessionRow{
		SessionId: s.SessionID, ParentSessionId: s.ParentSessionID, Agent: s.Agent, Node: s.Node,
		Name: s.Name, SessionName: s.SessionName(), Activity: string(s.Activity),
		ActivityUpdatedAtUnixNano: UnixNano(s.ActivityUpdatedAt), ActivitySource: s.ActivitySource,
		LastEvidenceAtUnixNano: UnixNano(s.LastEvidenceAt), WaitingOn: s.WaitingOn,
		WaitingChild: s.WaitingChild, SilentSinceUnixNano: UnixNano(s.SilentSince),
		TaskState: string(s.TaskState), TaskStateUpdatedAtUnixNano: UnixNano(s.TaskStateUpdatedAt),
		BlockerReason: s.BlockerReason, LifecycleReason: s.LifecycleReason, Task: s.Task,
		Claims: s.Claims, PendingClaims: s.PendingClaims, SuggestedSessionName: s.SuggestedSessionName,
		SessionNameSeenFor: s.SessionNameSeenFor, StartedAtUnixNano: UnixNano(s.StartedAt),
		LastEventAtUnixNano: UnixNano(s.LastEventAt), Ended: s.Ended, EndedAtUnixNano: UnixNano(s.EndedAt),
		EndReason: s.EndReason, AgentPid: int64(s.AgentPID), AgentPidStart: s.AgentPIDStart, Cwd: s.Cwd,
		Project: s.Project(), Repo: s.Repo, Branch: s.Branch, Events: int64(s.Events),
	}
}

// State is the session state a row carries. The reducer's bookkeeping
// (open turn, pending prompts, open calls, the last event cursor) never
// travels in a row, so it is zero; the derived fields (session_name,
// project) and the roster's own are the row's, not the state's.
func (r *SessionRow) State() presence.State {
	s := presence.State{
		SessionID: r.GetSessionId(), ParentSessionID: r.GetParentSessionId(), Agent: r.GetAgent(),
		Node: r.GetNode(), Name: r.GetName(), Activity: presence.Activity(r.GetActivity()),
		ActivityUpdatedAt: TimeOf(r.GetActivityUpdatedAtUnixNano()), ActivitySource: r.GetActivitySource(),
		LastEvidenceAt: TimeOf(r.GetLastEvidenceAtUnixNano()), WaitingOn: r.GetWaitingOn(),
		WaitingChild: r.GetWaitingChild(), SilentSince: TimeOf(r.GetSilentSinceUnixNano()),
		TaskState: presence.TaskState(r.GetTaskState()), TaskStateUpdatedAt: TimeOf(r.GetTaskStateUpdatedAtUnixNano()),
		BlockerReason: r.GetBlockerReason(), LifecycleReason: r.GetLifecycleReason(), Task: r.GetTask(),
		Claims: r.GetClaims(), PendingClaims: r.GetPendingClaims(), SuggestedSessionName: r.GetSuggestedSessionName(),
		SessionNameSeenFor: r.GetSessionNameSeenFor(), StartedAt: TimeOf(r.GetStartedAtUnixNano()),
		LastEventAt: TimeOf(r.GetLastEventAtUnixNano()), Ended: r.GetEnded(), EndedAt: TimeOf(r.GetEndedAtUnixNano()),
		EndReason: r.GetEndReason(), AgentPID: int(r.GetAgentPid()), AgentPIDStart: r.GetAgentPidStart(),
		Cwd: r.GetCwd(), Repo: r.GetRepo(), Branch: r.GetBranch(), Events: int(r.GetEvents()),
	}
	if s.Activity == "" {
		s.Activity = presence.ActivityUnknown
	}
	if s.TaskState == "" {
		s.TaskState = presence.TaskActive
	}
	return s
}

// ProjectName is the row's project: its project field, or what the state
// would say from its repo and cwd when the row does not carry it.
func (r *SessionRow) ProjectName() string {
	if p := r.GetProject(); p != "" {
		return p
	}
	return (&presence.State{Repo: r.GetRepo(), Cwd: r.GetCwd()}).Project()
}

// ProjectBranch is the row's PROJECT column: the project and @branch when
// known ("-@main" for a branch without a project).
func (r *SessionRow) ProjectBranch() string {
	p := r.ProjectName()
	if b := r.GetBranch(); b != "" {
		if p == "" {
			p = "-"
		}
		p += "@" + b
	}
	return p
}

// EvidenceAt is the time of the session's latest evidence: last evidence,
// or its last event where the row does not say.
func (r *SessionRow) EvidenceAt() time.Time {
	if t := TimeOf(r.GetLastEvidenceAtUnixNano()); !t.IsZero() {
		return t
	}
	return TimeOf(r.GetLastEventAtUnixNano())
}

// SilentSince is the silence rule (presence.Silence) over the row's
// fields, at now with threshold after.
func (r *SessionRow) SilentSince(now time.Time, after time.Duration) time.Time {
	return presence.Silence(presence.Activity(r.GetActivity()), r.GetEnded(), TimeOf(r.GetLastEvidenceAtUnixNano()),
		TimeOf(r.GetActivityUpdatedAtUnixNano()), now, after)
}

// UrgencyKey is the row's key for presence.CompareUrgency.
func (r *SessionRow) UrgencyKey() presence.UrgencyKey {
	return presence.UrgencyKey{SessionID: r.GetSessionId(), Activity: presence.Activity(r.GetActivity()),
		TaskState: presence.TaskState(r.GetTaskState()), Ended: r.GetEnded(),
		ActivityUpdatedAt:  TimeOf(r.GetActivityUpdatedAtUnixNano()),
		TaskStateUpdatedAt: TimeOf(r.GetTaskStateUpdatedAtUnixNano())}
}

// RowJSON is a row's JSON form: a session state's stable JSON
// (presence.StateJSON: the roster's key names, times as presence.FormatTime
// writes them; a row leaves the reducer's bookkeeping empty, so those keys
// are not written) and the roster's own keys. It is the only JSON of a
// row; row_json_test.go holds its keys.
type RowJSON struct {
	presence.StateJSON
	ClaimCount       int32         `json:"claim_count,omitempty"`
	Reachable        bool          `json:"reachable"`
	UnreachableSince string        `json:"unreachable_since,omitempty"`
	Source           string        `json:"source,omitempty"`
	HarnTask         *HarnTaskJSON `json:"harn_task,omitempty"`
	Hosted           *HostedJSON   `json:"hosted,omitempty"`
}

// HostedJSON is a hosted session's JSON form (`hosted`): its terminal's
// node-side facts, and while it needs input the last lines of its screen.
type HostedJSON struct {
	Worktree   string   `json:"worktree,omitempty"`
	Branch     string   `json:"branch,omitempty"`
	LaunchedAs string   `json:"launched_as,omitempty"`
	Attached   int32    `json:"attached"`
	Queued     int32    `json:"queued"`
	Peek       []string `json:"peek,omitempty"`
}

// HarnTaskJSON is a harn task's JSON form (`harn_task`).
type HarnTaskJSON struct {
	ID           string   `json:"id"`
	State        string   `json:"state"`
	Status       string   `json:"status,omitempty"`
	Text         string   `json:"text,omitempty"`
	QueueDepth   int32    `json:"queue_depth"`
	PendingCalls []string `json:"pending_calls,omitempty"`
}

func ft(ns int64) string { return presence.FormatTime(TimeOf(ns)) }

func pt(s string) int64 {
	t, _ := presence.ParseTime(s)
	return UnixNano(t)
}

// JSON is the row's JSON form.
func (r *SessionRow) JSON() RowJSON {
	j := RowJSON{StateJSON: presence.StateJSON{
		SessionID: r.GetSessionId(), ParentSessionID: r.GetParentSessionId(), Agent: r.GetAgent(),
		Node: r.GetNode(), Name: r.GetName(), SessionName: r.GetSessionName(), Activity: presence.Activity(r.GetActivity()),
		ActivityUpdatedAt: ft(r.GetActivityUpdatedAtUnixNano()), ActivitySource: r.GetActivitySource(),
		LastEvidenceAt: ft(r.GetLastEvidenceAtUnixNano()), WaitingOn: r.GetWaitingOn(),
		WaitingChild: r.GetWaitingChild(), SilentSince: ft(r.GetSilentSinceUnixNano()),
		TaskState: presence.TaskState(r.GetTaskState()), TaskStateUpdatedAt: ft(r.GetTaskStateUpdatedAtUnixNano()),
		BlockerReason: r.GetBlockerReason(), LifecycleReason: r.GetLifecycleReason(), Task: r.GetTask(),
		Claims: r.GetClaims(), PendingClaims: r.GetPendingClaims(),
		SuggestedSessionName: r.GetSuggestedSessionName(), SessionNameSeenFor: r.GetSessionNameSeenFor(),
		StartedAt: ft(r.GetStartedAtUnixNano()), LastEventAt: ft(r.GetLastEventAtUnixNano()),
		Ended: r.GetEnded(), EndedAt: ft(r.GetEndedAtUnixNano()), EndReason: r.GetEndReason(),
		AgentPID: int(r.GetAgentPid()), AgentPIDStart: r.GetAgentPidStart(), Cwd: r.GetCwd(),
		Project: r.GetProject(), Repo: r.GetRepo(), Branch: r.GetBranch(), Events: int(r.GetEvents())},
		ClaimCount: r.GetClaimCount(), Reachable: r.GetReachable(), UnreachableSince: ft(r.GetUnreachableSinceUnixNano()),
		Source: r.GetSource(),
	}
	if j.Activity == "" {
		j.Activity = presence.ActivityUnknown
	}
	if j.TaskState == "" {
		j.TaskState = presence.TaskActive
	}
	if t := r.GetHarnTask(); t != nil {
		j.HarnTask = &HarnTaskJSON{ID: t.Id, State: t.State, Status: t.Status, Text: t.Text,
			QueueDepth: t.QueueDepth, PendingCalls: t.PendingCalls}
	}
	if h := r.GetHosted(); h != nil {
		j.Hosted = &HostedJSON{Worktree: h.Worktree, Branch: h.Branch, LaunchedAs: h.LaunchedAs, Attached: h.Attached,
			Queued: h.Queued, Peek: h.Peek}
	}
	return j
}

// Row is the row a JSON form describes.
func (j *RowJSON) Row() *SessionRow {
	r := &SessionRow{
		SessionId: j.SessionID, ParentSessionId: j.ParentSessionID, Agent: j.Agent, Node: j.Node,
		Name: j.Name, SessionName: j.SessionName, Activity: string(j.Activity),
		ActivityUpdatedAtUnixNano: pt(j.ActivityUpdatedAt), ActivitySource: j.ActivitySource,
		LastEvidenceAtUnixNano: pt(j.LastEvidenceAt), WaitingOn: j.WaitingOn, WaitingChild: j.WaitingChild,
		SilentSinceUnixNano: pt(j.SilentSince), TaskState: string(j.TaskState),
		TaskStateUpdatedAtUnixNano: pt(j.TaskStateUpdatedAt), BlockerReason: j.BlockerReason,
		LifecycleReason: j.LifecycleReason, Task: j.Task, Claims: j.Claims, ClaimCount: j.ClaimCount,
		PendingClaims: j.PendingClaims, SuggestedSessionName: j.SuggestedSessionName,
		SessionNameSeenFor: j.SessionNameSeenFor, StartedAtUnixNano: pt(j.StartedAt),
		LastEventAtUnixNano: pt(j.LastEventAt), Ended: j.Ended, EndedAtUnixNano: pt(j.EndedAt),
		EndReason: j.EndReason, AgentPid: int64(j.AgentPID), AgentPidStart: j.AgentPIDStart, Cwd: j.Cwd,
		Project: j.Project, Repo: j.Repo, Branch: j.Branch, Events: int64(j.Events), Reachable: j.Reachable,
		UnreachableSinceUnixNano: pt(j.UnreachableSince), Source: j.Source,
	}
	if t := j.HarnTask; t != nil {
		r.HarnTask = &HarnTask{Id: t.ID, State: t.State, Status: t.Status, Text: t.Text,
			QueueDepth: t.QueueDepth, PendingCalls: t.PendingCalls}
	}
	if h := j.Hosted; h != nil {
		r.Hosted = &HostedView{Worktree: h.Worktree, Branch: h.Branch, LaunchedAs: h.LaunchedAs, Attached: h.Attached,
			Queued: h.Queued, Peek: h.Peek}
	}
	return r
}

// MarshalRowJSON writes a row's JSON form.
func MarshalRowJSON(r *SessionRow) ([]byte, error) { return json.Marshal(r.JSON()) }

// UnmarshalRowJSON reads a row's JSON form; an absent reachable reads as
// reachable.
func UnmarshalRowJSON(b []byte) (*SessionRow, error) {
	j := RowJSON{Reachable: true}
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("api: session row: %w", err)
	}
	return j.Row(), nil
}
