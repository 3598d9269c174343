package board

import (
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/text"
)

// Row is one session as the board shows it: the roster row itself
// (api.SessionRow, the one row type `harn agents list --json`, the
// gossip and the registry use; templates read its fields) and the
// waiting calls its action buttons need, which the row does not carry.
type Row struct {
	*api.SessionRow
	// PendingRequests are the open permission requests and task
	// confirmations; each gets Approve and Deny buttons.
	PendingRequests []Request
}

// RowOf is a roster row as the board shows it. Its harn task's pending
// calls become confirmation requests.
func RowOf(s *api.SessionRow) Row {
	if s == nil {
		s = &api.SessionRow{}
	}
	r := Row{SessionRow: s}
	if ht := s.GetHarnTask(); ht != nil {
		for _, c := range ht.GetPendingCalls() {
			r.PendingRequests = append(r.PendingRequests, Request{ID: c, Kind: "confirmation", TaskID: ht.GetId()})
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

// TaskText is the session's task: the row's, or its harn task's text
// when the row has none.
func (r Row) TaskText() string {
	if t := r.GetTask(); t != "" {
		return t
	}
	return r.GetHarnTask().GetText()
}

// HasTask reports whether the row carries a harn task that can still be
// steered or cancelled.
func (r Row) HasTask() bool {
	t := r.GetHarnTask()
	return t.GetId() != "" && t.GetState() != "terminal"
}

// Evidence is the time of the session's last evidence: last_evidence_at,
// or the newest of the axis times and the last event when it is absent.
func (r Row) Evidence() time.Time {
	if t := api.TimeOf(r.GetLastEvidenceAtUnixNano()); !t.IsZero() {
		return t
	}
	t := api.TimeOf(r.GetActivityUpdatedAtUnixNano())
	for _, u := range []int64{r.GetTaskStateUpdatedAtUnixNano(), r.GetLastEventAtUnixNano()} {
		if ut := api.TimeOf(u); ut.After(t) {
			t = ut
		}
	}
	return t
}

// clean returns r over a copy of its row with every text field (every
// string of the message, however deep) stripped of control characters,
// so agent text reaches a page only through text.Sanitize (html/template
// escapes it on top). The caller's row is not touched.
func clean(r Row) Row {
	row := &api.SessionRow{}
	if r.SessionRow != nil {
		row = proto.Clone(r.SessionRow).(*api.SessionRow)
		sanitizeMessage(row.ProtoReflect())
	}
	r.SessionRow = row
	if r.PendingRequests != nil {
		rs := make([]Request, len(r.PendingRequests))
		c := text.Sanitize
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
	return r
}

// sanitizeMessage strips control characters from every string field of
// m, in lists and nested messages too (a field added to the row later is
// covered without a change here).
func sanitizeMessage(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.StringKind:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				l.Set(i, protoreflect.ValueOfString(text.Sanitize(l.Get(i).String())))
			}
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				sanitizeMessage(l.Get(i).Message())
			}
		case fd.IsMap():
			// the row has no maps; were one added, its values are not shown
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString(text.Sanitize(v.String())))
		case fd.Message() != nil:
			sanitizeMessage(v.Message())
		}
		return true
	})
}
