package notify

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// SchemaV1 names the JSON format's schema; a consumer should check it.
const SchemaV1 = "harn.notify/v1"

// Bounds of rendered text, in runes.
const (
	maxName    = 64
	maxAgent   = 32
	maxNode    = 64
	maxTask    = 200
	maxReason  = 200
	maxWaiting = 120
	maxID      = 128
	maxLink    = 512
	// maxDetail bounds a request's detail (the call in one line), in
	// runes; maxPath a file or a cwd, in runes; maxCommand and maxDiff
	// the command and the diff, in bytes.
	maxDetail  = 2048
	maxPath    = 1024
	maxCommand = 4 << 10
	maxDiff    = 8 << 10
	// MaxText bounds a message's text.
	MaxText = 600
	// MaxTitle bounds a message's title.
	MaxTitle = 120
)

// Payload is the body of the json format, version harn.notify/v1. Field
// names are stable; new fields may be added, none removed or renamed
// without a new schema name. Every string is one line with no control
// characters.
//
//	{"schema":"harn.notify/v1","kind":"blocked","at":"2026-08-12T10:02:00.000Z",
//	 "title":"harn: Sable is blocked","text":"Sable (claude-code on buildbox) is blocked: …",
//	 "session":{"id":"s-42","name":"Sable","agent":"claude-code","node":"buildbox",
//	   "task":"fix the tests","activity":"idle","task_state":"blocked",
//	   "reason":"waiting for repository access","reachable":true}}
type Payload struct {
	Schema  string         `json:"schema"`
	Kind    Kind           `json:"kind"`
	At      string         `json:"at"`
	Title   string         `json:"title"`
	Text    string         `json:"text"`
	Session PayloadSession `json:"session"`
}

// PayloadSession is the session part of Payload.
type PayloadSession struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	Agent            string `json:"agent"`
	Node             string `json:"node"`
	Task             string `json:"task"`
	Activity         string `json:"activity"`
	TaskState        string `json:"task_state"`
	Reason           string `json:"reason,omitempty"`
	WaitingOn        string `json:"waiting_on,omitempty"`
	Reachable        bool   `json:"reachable"`
	UnreachableSince string `json:"unreachable_since,omitempty"`
	SilentSince      string `json:"silent_since,omitempty"`
	// Link is the session's page on the board (log in with the board's
	// token); Request the permission request it waits on.
	Link    string          `json:"link,omitempty"`
	Request *PayloadRequest `json:"request,omitempty"`
}

// PayloadRequest is the call a needs_input message's session waits on:
// its id, kind (permission, or a harn task's confirmation), the tool,
// the safe summary, and the call in full, only in the json format: the
// call in one line (detail), the whole command (with its line breaks;
// command_cut: cut at 4 KiB) and the cwd it runs in, a write's file
// (path) and unified diff (diff_cut: cut at 8 KiB), and since when it
// waits. Every string is stripped of control characters.
type PayloadRequest struct {
	ID           string `json:"id"`
	Kind         string `json:"kind,omitempty"`
	Tool         string `json:"tool,omitempty"`
	Summary      string `json:"summary,omitempty"`
	Detail       string `json:"detail,omitempty"`
	Command      string `json:"command,omitempty"`
	CommandCut   bool   `json:"command_cut,omitempty"`
	Cwd          string `json:"cwd,omitempty"`
	Path         string `json:"path,omitempty"`
	Diff         string `json:"diff,omitempty"`
	DiffCut      bool   `json:"diff_cut,omitempty"`
	WaitingSince string `json:"waiting_since,omitempty"`
}

// clean returns s with every text field folded to one safe line and
// clipped: the only way agent text enters a message.
func clean(s Session) Session {
	c := func(v string, n int) string { return text.Clip(text.OneLine(v), n) }
	// The row's fields a message shows, cleaned, in a row of their own: the
	// caller's row is left as it is.
	r := s.SessionRow
	s.SessionRow = &api.SessionRow{SessionId: c(r.GetSessionId(), maxID), Name: c(r.GetName(), maxName),
		Agent: c(r.GetAgent(), maxAgent), Node: c(r.GetNode(), maxNode), Task: c(r.GetTask(), maxTask),
		BlockerReason: c(r.GetBlockerReason(), maxReason), WaitingOn: c(r.GetWaitingOn(), maxWaiting),
		Activity: c(r.GetActivity(), 32), TaskState: c(r.GetTaskState(), 32), Reachable: r.GetReachable(),
		UnreachableSinceUnixNano: r.GetUnreachableSinceUnixNano(), SilentSinceUnixNano: r.GetSilentSinceUnixNano()}
	s.Link = c(s.Link, maxLink)
	if s.Permission != nil {
		r := *s.Permission
		r.ID, r.Kind, r.Tool, r.Summary, r.Detail = c(r.ID, maxID), c(r.Kind, 32), c(r.Tool, maxAgent), c(r.Summary, maxReason), c(r.Detail, maxDetail)
		r.Cwd, r.Path = c(r.Cwd, maxPath), c(r.Path, maxPath)
		var cut bool
		r.Command, cut = text.CutBytes(text.Lines(r.Command), maxCommand)
		r.CommandCut = r.CommandCut || cut
		r.Diff, cut = text.CutBytes(text.Lines(r.Diff), maxDiff)
		r.DiffCut = r.DiffCut || cut
		s.Permission = &r
	}
	return s
}

func label(s Session) string {
	if s.Name != "" {
		return s.Name
	}
	if s.SessionId != "" {
		return s.SessionId
	}
	return "a session"
}

// Title is a transition's short title, e.g. "harn: Sable needs input".
func Title(t Transition) string {
	s := clean(t.Session)
	var what string
	switch t.Kind {
	case KindNeedsInput:
		what = "needs input"
	case KindBlocked:
		what = "is blocked"
	case KindDone:
		what = "is done"
	case KindUnreachable:
		what = "is unreachable"
	case KindSilent:
		what = "went silent"
	default:
		what = text.Clip(text.OneLine(string(t.Kind)), 32)
	}
	return text.Clip("harn: "+label(s)+" "+what, MaxTitle)
}

// Text is a transition's one-line message, e.g. "Sable (claude-code on
// buildbox) is blocked: waiting for repository access. Task: fix the tests".
func Text(t Transition) string {
	s := clean(t.Session)
	who := label(s)
	switch {
	case s.Agent != "" && s.Node != "":
		who += fmt.Sprintf(" (%s on %s)", s.Agent, s.Node)
	case s.Agent != "":
		who += " (" + s.Agent + ")"
	case s.Node != "":
		who += " (on " + s.Node + ")"
	}
	var b strings.Builder
	b.WriteString(who)
	switch t.Kind {
	case KindNeedsInput:
		b.WriteString(" needs input")
		what := "request "
		if s.Permission != nil && s.Permission.Kind == "confirmation" {
			what = "confirmation of call "
		}
		switch {
		case s.Permission != nil && s.Permission.Summary != "":
			b.WriteString(": " + s.Permission.Summary + " (" + what + s.Permission.ID + ")")
		case s.Permission != nil:
			b.WriteString(": " + what + s.Permission.ID)
		case s.WaitingOn != "":
			b.WriteString(": waiting on " + s.WaitingOn)
		}
	case KindBlocked:
		b.WriteString(" is blocked")
		if s.BlockerReason != "" {
			b.WriteString(": " + s.BlockerReason)
		}
	case KindDone:
		b.WriteString(" is done")
	case KindUnreachable:
		b.WriteString(" is unreachable")
		if since := presence.FormatTime(api.TimeOf(s.UnreachableSinceUnixNano)); since != "" {
			b.WriteString(": its node has not answered since " + since)
		}
	case KindSilent:
		b.WriteString(" went silent")
		if since := presence.FormatTime(api.TimeOf(s.SilentSinceUnixNano)); since != "" {
			b.WriteString(": no evidence since " + since)
		}
	default:
		b.WriteString(": " + text.Clip(text.OneLine(string(t.Kind)), 32))
	}
	if s.Task != "" {
		b.WriteString(". Task: " + s.Task)
	}
	out := text.Clip(text.OneLine(b.String()), MaxText)
	if s.Link != "" {
		out = text.Clip(out, MaxText-len([]rune(s.Link))-1) + " " + s.Link
	}
	return out
}

// NewPayload builds the json format's body for t.
func NewPayload(t Transition) Payload {
	s := clean(t.Session)
	p := Payload{
		Schema: SchemaV1, Kind: Kind(text.Clip(text.OneLine(string(t.Kind)), 32)), At: presence.FormatTime(t.At),
		Title: Title(t), Text: Text(t),
		Session: PayloadSession{
			ID: s.SessionId, Name: s.Name, Agent: s.Agent, Node: s.Node, Task: s.Task,
			Activity: s.Activity, TaskState: s.TaskState,
			Reason: s.BlockerReason, WaitingOn: s.WaitingOn, Reachable: s.Reachable,
			UnreachableSince: presence.FormatTime(api.TimeOf(s.UnreachableSinceUnixNano)),
			SilentSince:      presence.FormatTime(api.TimeOf(s.SilentSinceUnixNano)),
			Link:             s.Link,
		},
	}
	if r := s.Permission; r != nil && t.Kind == KindNeedsInput {
		p.Session.Request = &PayloadRequest{ID: r.ID, Kind: r.Kind, Tool: r.Tool, Summary: r.Summary, Detail: r.Detail,
			Command: r.Command, CommandCut: r.CommandCut, Cwd: r.Cwd, Path: r.Path, Diff: r.Diff, DiffCut: r.DiffCut,
			WaitingSince: presence.FormatTime(r.Opened)}
	}
	return p
}

// slackEscape escapes the three characters Slack's message formatting
// gives meaning to, so agent text cannot mention a channel or a user.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// ntfy's priority and tags per kind (docs.ntfy.sh/publish: priority 1 to 5,
// tags comma-separated; tags naming an emoji show as that emoji).
var ntfyStyle = map[Kind]struct{ prio, tags string }{
	KindNeedsInput:  {"4", "bell,harn"},
	KindBlocked:     {"4", "warning,harn"},
	KindDone:        {"3", "white_check_mark,harn"},
	KindUnreachable: {"4", "electric_plug,harn"},
	KindSilent:      {"3", "zzz,harn"},
}

// Render builds the request that tells t to w, in w's format.
func Render(w Webhook, t Transition) (Request, error) {
	switch w.Format {
	case FormatJSON, "":
		body, err := json.Marshal(NewPayload(t))
		return Request{URL: w.URL, ContentType: "application/json", Body: body}, err
	case FormatSlack:
		body, err := json.Marshal(map[string]string{"text": slackEscape.Replace(Text(t))})
		return Request{URL: w.URL, ContentType: "application/json", Body: body}, err
	case FormatDiscord:
		body, err := json.Marshal(struct {
			Content         string `json:"content"`
			AllowedMentions struct {
				Parse []string `json:"parse"`
			} `json:"allowed_mentions"`
		}{Content: Text(t), AllowedMentions: struct {
			Parse []string `json:"parse"`
		}{Parse: []string{}}})
		return Request{URL: w.URL, ContentType: "application/json", Body: body}, err
	case FormatNtfy:
		st, ok := ntfyStyle[t.Kind]
		if !ok {
			st.prio, st.tags = "3", "harn"
		}
		h := http.Header{}
		h.Set("Title", headerText(Title(t)))
		h.Set("Priority", st.prio)
		h.Set("Tags", st.tags)
		if acts := ntfyActions(t); acts != "" {
			h.Set("Actions", acts)
		}
		return Request{URL: w.URL, ContentType: "text/plain; charset=utf-8", Header: h, Body: []byte(Text(t))}, nil
	}
	return Request{}, &FieldError{Field: "format", Value: string(w.Format), Problem: "is not a format",
		Fix: "use one of json, slack, discord, ntfy"}
}

// headerText makes s safe as an HTTP header value: ASCII as is, anything
// else as an RFC 2047 encoded word, which ntfy decodes.
func headerText(s string) string {
	s = text.OneLine(s)
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return mime.BEncoding.Encode("utf-8", s)
		}
	}
	return s
}

// maxActions is ntfy's limit of buttons on one message.
const maxActions = 3

// ntfyAction is one of ntfy's "http" actions as its JSON form names the
// fields (docs.ntfy.sh/publish, "Action buttons"): the app makes the
// request when the button is pressed, then clears the notification.
type ntfyAction struct {
	Action  string            `json:"action"`
	Label   string            `json:"label"`
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	Clear   bool              `json:"clear"`
}

// ntfyActions is the Actions header of t: ntfy's JSON array form (the
// header starts with "["), one line of ASCII. It is empty when t has no
// buttons, or only ones that cannot go into a header.
func ntfyActions(t Transition) string {
	if t.Kind != KindNeedsInput || len(t.Actions) == 0 {
		return ""
	}
	var out []ntfyAction
	for _, a := range t.Actions {
		if len(out) == maxActions {
			break
		}
		label := text.Clip(text.OneLine(a.Label), 40)
		if label == "" || a.URL == "" || len(a.URL) > maxLink {
			continue
		}
		out = append(out, ntfyAction{Action: "http", Label: label, URL: a.URL, Method: a.Method,
			Headers: a.Headers, Body: a.Body, Clear: true})
	}
	if len(out) == 0 {
		return ""
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	for _, c := range b {
		// json.Marshal escapes control characters; anything else that
		// is not printable ASCII does not go into a header.
		if c < ' ' || c >= utf8.RuneSelf {
			return ""
		}
	}
	return string(b)
}
