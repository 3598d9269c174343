package board

import (
	"strings"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/text"
)

// Row is one session as the board shows it: the fields of a roster entry
// (`harn agents list --json`) plus the data its action buttons need.
type Row struct {
	SessionID       string
	ParentSessionID string
	Name            string
	Agent           string
	Node            string
	Task            string
	Cwd             string
	Project         string
	Branch          string

	Activity          string // unknown, working, needs_input, idle
	ActivityUpdatedAt time.Time
	ActivitySource    string

	TaskState          string // active, blocked, done
	TaskStateUpdatedAt time.Time
	BlockerReason      string
	LifecycleReason    string

	LastEvidenceAt time.Time
	LastEventAt    time.Time
	StartedAt      time.Time
	SilentSince    time.Time
	WaitingOn      string
	WaitingChild   string

	// Reachable is false when the owning node cannot be reached; an absent
	// field reads as reachable.
	Reachable        bool
	UnreachableSince time.Time
	// Source says where the state came from (local, gossip, registry).
	Source string

	Claims               []string
	PendingClaims        []string
	SuggestedSessionName string
	SessionName          string
	SessionNameSeenFor   string
	AgentPID             int

	Ended     bool
	EndedAt   time.Time
	EndReason string
	Events    int

	// PendingRequests are the open permission requests and task
	// confirmations; each gets Approve and Deny buttons.
	PendingRequests []Request
	// HarnTask is the session's harn task, when it has one; it gets Steer,
	// Follow-up and Cancel buttons.
	HarnTask *HarnTask
	// Hosted is the session's terminal when its node hosts it.
	Hosted *Hosted
}

// RowOf is a roster row as the board shows it: the one function from the
// row (api.SessionRow) to the board's view. A harn task's text stands in
// for a missing task, and its pending calls become confirmation requests.
func RowOf(s *api.SessionRow) Row {
	r := rowOfAPI(s)
	if h := s.GetHosted(); h != nil {
		r.Hosted = &Hosted{Worktree: h.Worktree, Branch: h.Branch, Peek: append([]string(nil), h.Peek...)}
	}
	return r
}

func rowOfAPI(s *api.SessionRow) Row {
	t := api.TimeOf
	r := Row{SessionID: s.GetSessionId(), ParentSessionID: s.GetParentSessionId(), Name: s.GetName(),
		Agent: s.GetAgent(), Node: s.GetNode(), Task: s.GetTask(), Cwd: s.GetCwd(), Project: s.ProjectName(),
		Branch: s.GetBranch(), Activity: s.GetActivity(), ActivityUpdatedAt: t(s.GetActivityUpdatedAtUnixNano()),
		ActivitySource: s.GetActivitySource(), TaskState: s.GetTaskState(),
		TaskStateUpdatedAt: t(s.GetTaskStateUpdatedAtUnixNano()), BlockerReason: s.GetBlockerReason(),
		LifecycleReason: s.GetLifecycleReason(), LastEvidenceAt: t(s.GetLastEvidenceAtUnixNano()),
		LastEventAt: t(s.GetLastEventAtUnixNano()), StartedAt: t(s.GetStartedAtUnixNano()),
		SilentSince: t(s.GetSilentSinceUnixNano()), WaitingOn: s.GetWaitingOn(), WaitingChild: s.GetWaitingChild(),
		Reachable: s.GetReachable(), UnreachableSince: t(s.GetUnreachableSinceUnixNano()), Source: s.GetSource(),
		Claims: s.GetClaims(), PendingClaims: s.GetPendingClaims(), SuggestedSessionName: s.GetSuggestedSessionName(),
		SessionName: s.GetSessionName(), SessionNameSeenFor: s.GetSessionNameSeenFor(), Ended: s.GetEnded(),
		EndedAt: t(s.GetEndedAtUnixNano()), EndReason: s.GetEndReason(), Events: int(s.GetEvents()),
		AgentPID: int(s.GetAgentPid())}
	if ht := s.GetHarnTask(); ht != nil {
		r.HarnTask = &HarnTask{ID: ht.Id, State: ht.State, Status: ht.Status, Text: ht.Text,
			PendingCalls: append([]string(nil), ht.PendingCalls...)}
		if r.Task == "" {
			r.Task = ht.Text
		}
		for _, c := range ht.PendingCalls {
			r.PendingRequests = append(r.PendingRequests, Request{ID: c, Kind: "confirmation", TaskID: ht.Id})
		}
	}
	return r
}

// Request is one open permission request or task confirmation.
type Request struct {
	ID      string // request id (permission) or call id (confirmation)
	Kind    string // "permission" or "confirmation"
	TaskID  string // the harn task a confirmation belongs to
	Summary string // what is asked, for people
	// What the call asks, from its own input: the tool and agent, a shell
	// call's whole command (CommandCut: only its head, at the bound) and
	// the cwd it runs in, a write's file and its diff (DiffCut: cut at the
	// bound), and the call in one line (Detail: another tool's input);
	// the session's name and project@branch, when it opened, and whether
	// the agent takes "allow for this session".
	Tool, Agent, Detail, Cwd, Handle, Place string
	Command, Path, Diff                     string
	CommandCut, DiffCut                     bool
	Opened                                  time.Time
	SessionWide                             bool
	// Waited is how long it has waited, as the page shows it.
	Waited string
}

// HasFacts reports whether the request says what it asks.
func (q Request) HasFacts() bool {
	return q.Command != "" || q.Path != "" || q.Diff != "" || q.Detail != ""
}

// What is the call as the dialog names it: the whole command, else the
// file, else the call in one line.
func (q Request) What() string {
	switch {
	case q.Command != "":
		return q.Command
	case q.Path != "":
		return "file " + q.Path
	}
	return q.Detail
}

// DiffLines counts the diff's lines, for its collapsed summary.
func (q Request) DiffLines() int {
	if q.Diff == "" {
		return 0
	}
	return strings.Count(q.Diff, "\n") + 1
}

// HarnTask is a session's harn task as the task runtime shows it.
type HarnTask struct {
	ID           string
	State        string // running, queued, blocked, cancelling, quiescing, terminal
	Status       string
	Text         string
	PendingCalls []string // calls waiting for a confirmation
}

// HasTask reports whether the row carries a harn task that can still be
// steered or cancelled.
func (r Row) HasTask() bool {
	return r.HarnTask != nil && r.HarnTask.ID != "" && r.HarnTask.State != "terminal"
}

// Evidence is the time of the session's last evidence: last_evidence_at,
// or the newest of the axis times and the last event when it is absent.
func (r Row) Evidence() time.Time {
	if !r.LastEvidenceAt.IsZero() {
		return r.LastEvidenceAt
	}
	t := r.ActivityUpdatedAt
	for _, u := range []time.Time{r.TaskStateUpdatedAt, r.LastEventAt} {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// clean returns r with every text field stripped of control characters,
// so agent text reaches a page only through text.Sanitize (html/template
// escapes it on top).
func clean(r Row) Row {
	c := text.Sanitize
	for _, p := range []*string{&r.SessionID, &r.ParentSessionID, &r.Name, &r.Agent, &r.Node, &r.Task,
		&r.Cwd, &r.Project, &r.Branch, &r.Activity, &r.ActivitySource, &r.TaskState, &r.BlockerReason,
		&r.LifecycleReason, &r.WaitingOn, &r.WaitingChild, &r.Source, &r.SuggestedSessionName,
		&r.SessionName, &r.EndReason} {
		*p = c(*p)
	}
	r.SessionNameSeenFor = c(r.SessionNameSeenFor)
	r.Claims, r.PendingClaims = cleanList(r.Claims), cleanList(r.PendingClaims)
	if r.PendingRequests != nil {
		rs := make([]Request, len(r.PendingRequests))
		for i, q := range r.PendingRequests {
			cmd, cmdCut := text.CutBytes(text.Lines(q.Command), maxCommand)
			diff, diffCut := text.CutBytes(text.Lines(q.Diff), maxDiff)
			rs[i] = Request{ID: c(q.ID), Kind: c(q.Kind), TaskID: c(q.TaskID), Summary: c(q.Summary), Tool: c(q.Tool),
				Agent: c(q.Agent), Detail: text.Clip(c(q.Detail), maxDetail), Cwd: text.Clip(c(q.Cwd), maxPath),
				Handle: c(q.Handle), Place: c(q.Place), Path: text.Clip(c(q.Path), maxPath),
				Command: cmd, CommandCut: q.CommandCut || cmdCut, Diff: diff, DiffCut: q.DiffCut || diffCut,
				Opened: q.Opened, SessionWide: q.SessionWide}
		}
		r.PendingRequests = rs
	}
	if r.HarnTask != nil {
		t := *r.HarnTask
		t.ID, t.State, t.Status, t.Text = c(t.ID), c(t.State), c(t.Status), c(t.Text)
		t.PendingCalls = cleanList(t.PendingCalls)
		r.HarnTask = &t
	}
	if r.Hosted != nil {
		h := Hosted{Worktree: c(r.Hosted.Worktree), Branch: c(r.Hosted.Branch), Peek: cleanList(r.Hosted.Peek)}
		r.Hosted = &h
	}
	return r
}

func cleanList(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = text.Sanitize(s)
	}
	return out
}
