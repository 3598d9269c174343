package board

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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

// ErrBadRow is wrapped by every DecodeRow failure.
var ErrBadRow = errors.New("board: bad roster row")

// DecodeRow reads one roster entry's JSON leniently: absent fields keep
// their zero value (reachable defaults to true), a field of an unexpected
// type is read as best it can be (a number where a string was expected
// becomes its text) and never fails the row. Only a value that is not a
// JSON object, or a row without session_id, is an error.
func DecodeRow(b []byte) (Row, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return Row{}, fmt.Errorf("%w: %w", ErrBadRow, err)
	}
	if m == nil {
		return Row{}, fmt.Errorf("%w: null instead of an object", ErrBadRow)
	}
	s := func(k string) string { return strOf(m[k]) }
	t := func(k string) time.Time { return timeOf(m[k]) }
	r := Row{
		SessionID: s("session_id"), ParentSessionID: s("parent_session_id"), Name: s("name"),
		Agent: s("agent"), Node: s("node"), Cwd: s("cwd"), Project: s("project"), Branch: s("branch"),
		Activity: s("activity"), ActivityUpdatedAt: t("activity_updated_at"), ActivitySource: s("activity_source"),
		TaskState: s("task_state"), TaskStateUpdatedAt: t("task_state_updated_at"),
		BlockerReason: s("blocker_reason"), LifecycleReason: s("lifecycle_reason"),
		LastEvidenceAt: t("last_evidence_at"), LastEventAt: t("last_event_at"), StartedAt: t("started_at"),
		SilentSince: t("silent_since"), WaitingOn: s("waiting_on"), WaitingChild: s("waiting_child"),
		Reachable: true, UnreachableSince: t("unreachable_since"), Source: s("source"),
		Claims: listOf(m["claims"]), SuggestedSessionName: s("suggested_session_name"),
		SessionName: s("session_name"), Ended: boolOf(m["ended"]), EndedAt: t("ended_at"),
		EndReason: s("end_reason"), Events: int(numOf(m["events"])),
	}
	if v, ok := m["reachable"]; ok && !isNull(v) {
		r.Reachable = boolOf(v)
	}
	// task is the task text; an object there is a harn task (the task
	// runtime's view), as is harn_task.
	if raw := m["task"]; isObject(raw) {
		r.HarnTask = taskOf(raw)
	} else {
		r.Task = strOf(raw)
	}
	if raw := m["harn_task"]; isObject(raw) {
		r.HarnTask = taskOf(raw)
	}
	if r.Task == "" && r.HarnTask != nil {
		r.Task = r.HarnTask.Text
	}
	r.PendingRequests = requestsOf(m["pending_requests"])
	if r.HarnTask != nil {
		for _, c := range r.HarnTask.PendingCalls {
			r.PendingRequests = append(r.PendingRequests, Request{ID: c, Kind: "confirmation", TaskID: r.HarnTask.ID})
		}
	}
	if r.SessionID == "" {
		return Row{}, fmt.Errorf("%w: no session_id", ErrBadRow)
	}
	return r, nil
}

// DecodeRows reads a roster as `harn agents list --json` prints it: a JSON
// array of entries. Entries that are not objects or have no session_id are
// skipped and counted.
func DecodeRows(b []byte) (rows []Row, skipped int, err error) {
	var list []json.RawMessage
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, 0, fmt.Errorf("%w: the roster is not a JSON array: %w", ErrBadRow, err)
	}
	for _, e := range list {
		r, err := DecodeRow(e)
		if err != nil {
			skipped++
			continue
		}
		rows = append(rows, r)
	}
	return rows, skipped, nil
}

func isNull(b json.RawMessage) bool {
	return len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "null"
}

func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// strOf reads any JSON value as text: a string as itself, a number or bool
// as its literal, a list as its items joined by ", ", an object as compact
// JSON.
func strOf(b json.RawMessage) string {
	b = bytes.TrimSpace(b)
	if isNull(b) {
		return ""
	}
	switch b[0] {
	case '"':
		var s string
		if json.Unmarshal(b, &s) == nil {
			return s
		}
		return ""
	case '[':
		return strings.Join(listOf(b), ", ")
	case '{':
		var buf bytes.Buffer
		if json.Compact(&buf, b) == nil {
			return buf.String()
		}
		return ""
	}
	return string(b)
}

// listOf reads a list of strings; objects in it are read through their
// "path", "id" or "name" field, or as compact JSON; a lone value is a list
// of one.
func listOf(b json.RawMessage) []string {
	b = bytes.TrimSpace(b)
	if isNull(b) {
		return nil
	}
	if b[0] != '[' {
		if s := strOf(b); s != "" {
			return []string{s}
		}
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(b, &items) != nil {
		return nil
	}
	var out []string
	for _, it := range items {
		var s string
		if isObject(it) {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(it, &m)
			for _, k := range []string{"path", "id", "name"} {
				if s = strOf(m[k]); s != "" {
					break
				}
			}
			if s == "" {
				s = strOf(it)
			}
		} else {
			s = strOf(it)
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func boolOf(b json.RawMessage) bool {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(string(b)), `"`)) {
	case "true", "1", "yes":
		return true
	}
	return false
}

func numOf(b json.RawMessage) float64 {
	f, err := strconv.ParseFloat(strings.Trim(strings.TrimSpace(string(b)), `"`), 64)
	if err != nil || f != f || f > 1e15 || f < -1e15 {
		return 0
	}
	return f
}

// timeOf reads an RFC 3339 time; anything else is the zero time.
func timeOf(b json.RawMessage) time.Time {
	s := strOf(b)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

func taskOf(b json.RawMessage) *HarnTask {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	t := &HarnTask{ID: strOf(m["id"]), State: strOf(m["state"]), Status: strOf(m["status"]),
		PendingCalls: listOf(m["pending_calls"])}
	for _, k := range []string{"text", "title", "summary"} {
		if t.Text = strOf(m[k]); t.Text != "" {
			break
		}
	}
	return t
}

// requestsOf reads pending_requests: request ids, or objects with id, kind,
// task_id and summary (or tool), and what the call asks: tool, agent,
// command, cwd, path, diff, detail, command_cut, diff_cut and opened.
func requestsOf(b json.RawMessage) []Request {
	b = bytes.TrimSpace(b)
	if isNull(b) || b[0] != '[' {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(b, &items) != nil {
		return nil
	}
	var out []Request
	for _, it := range items {
		rq := Request{Kind: "permission"}
		if isObject(it) {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(it, &m)
			rq.ID, rq.TaskID = strOf(m["id"]), strOf(m["task_id"])
			if k := strOf(m["kind"]); k != "" {
				rq.Kind = k
			}
			rq.Tool, rq.Agent, rq.Cwd, rq.Path = strOf(m["tool"]), strOf(m["agent"]), strOf(m["cwd"]), strOf(m["path"])
			rq.Command, rq.Diff, rq.Detail = strOf(m["command"]), strOf(m["diff"]), strOf(m["detail"])
			rq.CommandCut, rq.DiffCut = boolOf(m["command_cut"]), boolOf(m["diff_cut"])
			rq.Opened = timeOf(m["opened"])
			if rq.Summary = strOf(m["summary"]); rq.Summary == "" {
				rq.Summary = strOf(m["tool"])
			}
		} else {
			rq.ID = strOf(it)
		}
		if rq.ID != "" {
			out = append(out, rq)
		}
	}
	return out
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
