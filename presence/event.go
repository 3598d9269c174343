package presence

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Canonical event types. See docs/design.md, "Canonical events and the
// reducer".
const (
	TypeSessionStart     = "session.start"
	TypeSubagentStart    = "subagent.start"
	TypeUserPromptSubmit = "user_prompt.submit"
	TypeToolPreUse       = "tool.pre_use"
	TypeCommandStart     = "command.start"
	TypeInputRequested   = "interaction.input_requested"
	TypeInputResolved    = "interaction.input_resolved"
	TypeTurnStop         = "turn.stop"
	TypeSessionEnd       = "session.end"
	TypeSubagentStop     = "subagent.stop"
	TypeToolPostUse      = "tool.post_use"
	TypeOutputChunk      = "output.chunk"
	TypeNarration        = "narration"
	TypeCoordination     = "coordination.command"
	TypeTaskState        = "state.task_state"
	TypeTaskSet          = "task.set"
	TypeClaimWrite       = "claim.write"
	// TypeClaimPending: the node could not record the claim on these
	// paths yet and retries it; the row shows them pending, not held.
	TypeClaimPending = "claim.pending"
	// TypeClaimRelease: the claim on these paths was dropped (its write was
	// denied, or a retried claim lost its race).
	TypeClaimRelease = "claim.release"
	// TypeSessionNameSeen records that the agent showed a session name
	// (attr name): the node observes it in the agent's own text.
	TypeSessionNameSeen = "session_name.seen"
	// TypeContextCompacted records a compaction of a harn session's
	// context (attrs method, before_tokens, after_tokens, note): shown in
	// the trace, lifecycle-neutral.
	TypeContextCompacted = "context.compacted"
)

// KnownTypes lists every canonical type the reducer gives meaning to.
// Other types are stored and change nothing.
var KnownTypes = map[string]bool{
	TypeSessionStart: true, TypeSubagentStart: true, TypeUserPromptSubmit: true,
	TypeToolPreUse: true, TypeCommandStart: true, TypeInputRequested: true,
	TypeInputResolved: true, TypeTurnStop: true, TypeSessionEnd: true,
	TypeSubagentStop: true, TypeToolPostUse: true, TypeOutputChunk: true,
	TypeNarration: true, TypeCoordination: true, TypeTaskState: true,
	TypeTaskSet: true, TypeClaimWrite: true, TypeSessionNameSeen: true,
	TypeClaimPending: true, TypeClaimRelease: true,
}

// evidenceTypes are the events that evidence the agent itself acting: what
// moves LastEvidenceAt. Task text, claims, lifecycle declarations, name
// observations, coordination and unknown types are not agent activity.
var evidenceTypes = map[string]bool{
	TypeSessionStart: true, TypeSubagentStart: true, TypeUserPromptSubmit: true,
	TypeToolPreUse: true, TypeCommandStart: true, TypeInputRequested: true,
	TypeInputResolved: true, TypeTurnStop: true, TypeSessionEnd: true,
	TypeSubagentStop: true, TypeToolPostUse: true, TypeOutputChunk: true,
	TypeNarration: true,
}

// Well-known attribute keys.
const (
	AttrTool          = "tool"
	AttrTaskState     = "task_state"
	AttrReason        = "reason"
	AttrSuggestedName = "suggested_session_name"
	AttrNameReminted  = "name_reminted"
	AttrTask          = "task"
	AttrPaths         = "paths"
	AttrSessionName   = "session_name"
	AttrRequestKey    = "request_key"
	// AttrCallKey names one tool call by the agent's own id for it
	// ("call:" + tool_use_id), and AttrInputKey by the keyed digest of its
	// tool and input. A request and its resolution match by call key
	// when both name their call, else by any key they share.
	AttrCallKey  = "call_key"
	AttrInputKey = "input_key"
	// AttrDecision (allow or deny) and AttrBy (the operator) are an
	// operator's answer on interaction.input_resolved; AttrRequest the
	// node's id of the request answered.
	AttrDecision   = "decision"
	AttrBy         = "by"
	AttrRequest    = "request"
	AttrAgentPID   = "agent_pid"
	AttrAgentStart = "agent_pid_start"
	AttrCwd        = "cwd"
	AttrSource     = "source"
	AttrError      = "error"
	AttrDigest     = "digest"
	// AttrSummary is the short, safe description of what an input request
	// waits on ("Bash: git", "Edit src/app.go"); adapters derive it and
	// never put raw command text or tool input beyond a file path in it.
	AttrSummary = "summary"
	// AttrRepo and AttrBranch name where the session runs: the
	// repository's name and its branch, stamped by the hook process.
	AttrRepo   = "repo"
	AttrBranch = "branch"
	// AttrName is the session name a session_name.seen event observed.
	AttrName = "name"
	// AttrTranscriptPath is the agent's transcript file, where the node
	// looks for the session name the agent showed.
	AttrTranscriptPath = "transcript_path"
)

// Limits on outside input. Oversized input is refused, never truncated.
const (
	MaxEventBytes     = 64 << 10
	MaxReasonChars    = 1000
	MaxTaskChars      = 4000
	MaxIDLen          = 256
	MaxTypeLen        = 128
	MaxAttrs          = 64
	MaxPathsPerClaim  = 256
	MaxAttrStringLen  = 8 << 10
	TimestampLayout   = "2006-01-02T15:04:05.000Z07:00"
	timestampLayoutIn = time.RFC3339Nano
)

// The span of ts that the wire form (ts_unix_nano, an int64) can carry.
var (
	minTS = time.Unix(0, math.MinInt64).UTC()
	maxTS = time.Unix(0, math.MaxInt64).UTC()
)

// Event is one canonical event. JSON is its file and display form; the
// protobuf message in node/api carries the same fields.
type Event struct {
	ID              string         `json:"id"`
	SessionID       string         `json:"session_id"`
	ParentSessionID string         `json:"parent_session_id,omitempty"`
	Type            string         `json:"type"`
	TS              time.Time      `json:"ts"`
	Agent           string         `json:"agent,omitempty"`
	Node            string         `json:"node,omitempty"`
	Seq             uint64         `json:"seq,omitempty"`
	Attrs           map[string]any `json:"attrs,omitempty"`
}

// ErrInvalidEvent is wrapped by every validation failure.
var ErrInvalidEvent = errors.New("invalid event")

// FieldError names the field of an event that is wrong and how to fix it.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrInvalidEvent) hold.
func (e *FieldError) Unwrap() error { return ErrInvalidEvent }

func fieldErr(field, format string, a ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

type eventJSON struct {
	ID              string         `json:"id"`
	SessionID       string         `json:"session_id"`
	ParentSessionID string         `json:"parent_session_id,omitempty"`
	Type            string         `json:"type"`
	TS              string         `json:"ts"`
	Agent           string         `json:"agent,omitempty"`
	Node            string         `json:"node,omitempty"`
	Seq             uint64         `json:"seq,omitempty"`
	Attrs           map[string]any `json:"attrs,omitempty"`
}

// MarshalJSON writes ts with millisecond precision in UTC, as the seed shows.
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(eventJSON{
		ID: e.ID, SessionID: e.SessionID, ParentSessionID: e.ParentSessionID,
		Type: e.Type, TS: FormatTime(e.TS), Agent: e.Agent, Node: e.Node,
		Seq: e.Seq, Attrs: e.Attrs,
	})
}

// UnmarshalJSON reads an event and normalizes its attributes. It does not
// validate; call Validate.
func (e *Event) UnmarshalJSON(b []byte) error {
	var j eventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Event{ID: j.ID, SessionID: j.SessionID, ParentSessionID: j.ParentSessionID,
		Type: j.Type, Agent: j.Agent, Node: j.Node, Seq: j.Seq, Attrs: j.Attrs}
	if j.TS != "" {
		t, err := ParseTime(j.TS)
		if err != nil {
			return fieldErr("ts", "%q is not an RFC 3339 timestamp; write it like 2026-08-12T10:02:00.000Z", j.TS)
		}
		e.TS = t
	}
	e.Attrs = NormalizeAttrs(e.Attrs)
	return nil
}

// FormatTime renders t as the canonical millisecond UTC timestamp, or "" for
// the zero time. A time finer than a millisecond keeps all its digits, so
// that a JSON round trip (a JSONL ledger, a resumed heartbeat) cannot merge
// or reorder events.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	t = t.UTC()
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return t.Format(time.RFC3339Nano)
	}
	return t.Format(TimestampLayout)
}

// ParseTime parses an RFC 3339 timestamp.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(timestampLayoutIn, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// NormalizeAttrs turns JSON arrays of strings into []string so that callers
// and the reducer see one representation.
func NormalizeAttrs(m map[string]any) map[string]any {
	for k, v := range m {
		if arr, ok := v.([]any); ok {
			ss := make([]string, 0, len(arr))
			all := true
			for _, x := range arr {
				s, ok := x.(string)
				if !ok {
					all = false
					break
				}
				ss = append(ss, s)
			}
			if all {
				m[k] = ss
			}
		}
	}
	return m
}

// AttrString returns the string attribute k, or "".
func (e *Event) AttrString(k string) string {
	if v, ok := e.Attrs[k].(string); ok {
		return v
	}
	return ""
}

// AttrBool returns the boolean attribute k.
func (e *Event) AttrBool(k string) bool {
	v, _ := e.Attrs[k].(bool)
	return v
}

// AttrStrings returns the string-list attribute k. A single string is a
// one-element list.
func (e *Event) AttrStrings(k string) []string {
	switch v := e.Attrs[k].(type) {
	case []string:
		return v
	case string:
		if v == "" {
			return nil
		}
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// SetAttr sets attribute k, allocating the map when needed.
func (e *Event) SetAttr(k string, v any) {
	if e.Attrs == nil {
		e.Attrs = make(map[string]any, 4)
	}
	e.Attrs[k] = v
}

// Validate checks the required fields and bounds of an event. The id may be
// empty (the node assigns one); the type may be unknown (it is stored and
// changes nothing).
func (e *Event) Validate() error {
	switch {
	case e.SessionID == "":
		return fieldErr("session_id", "is required; set it to the agent's session id")
	case !utf8.ValidString(e.SessionID):
		return fieldErr("session_id", "is not valid UTF-8; send the agent's session id as text")
	case len(e.SessionID) > MaxIDLen || strings.ContainsAny(e.SessionID, "\x00/\n"):
		return fieldErr("session_id", "must be at most %d bytes of text without '/', NUL or newline", MaxIDLen)
	case len(e.ID) > MaxIDLen || strings.ContainsRune(e.ID, 0):
		return fieldErr("id", "must be at most %d bytes without NUL", MaxIDLen)
	case len(e.ParentSessionID) > MaxIDLen || !utf8.ValidString(e.ParentSessionID):
		return fieldErr("parent_session_id", "must be at most %d bytes of valid UTF-8", MaxIDLen)
	case e.Type == "":
		return fieldErr("type", "is required; use a canonical type such as tool.pre_use")
	case len(e.Type) > MaxTypeLen:
		return fieldErr("type", "must be at most %d bytes", MaxTypeLen)
	case e.TS.IsZero():
		return fieldErr("ts", "is required; write it like 2026-08-12T10:02:00.000Z")
	case e.TS.Before(minTS) || e.TS.After(maxTS):
		return fieldErr("ts", "is %s; a timestamp lies between %s and %s", FormatTime(e.TS), FormatTime(minTS), FormatTime(maxTS))
	case len(e.Attrs) > MaxAttrs:
		return fieldErr("attrs", "has %d keys; at most %d are allowed", len(e.Attrs), MaxAttrs)
	case len(e.Agent) > MaxTypeLen:
		return fieldErr("agent", "must be at most %d bytes", MaxTypeLen)
	}
	for k, v := range e.Attrs {
		if err := validateAttr(k, v); err != nil {
			return err
		}
	}
	if r := e.AttrString(AttrReason); utf8.RuneCountInString(r) > MaxReasonChars {
		return fieldErr("attrs.reason", "is %d characters; a reason is at most %d", utf8.RuneCountInString(r), MaxReasonChars)
	}
	if e.Type == TypeTaskState {
		switch TaskState(e.AttrString(AttrTaskState)) {
		case TaskActive, TaskBlocked, TaskDone:
		default:
			return fieldErr("attrs.task_state", "is %q; use active, blocked or done", e.AttrString(AttrTaskState))
		}
	}
	if e.Type == TypeTaskSet && utf8.RuneCountInString(e.AttrString(AttrTask)) > MaxTaskChars {
		return fieldErr("attrs.task", "is longer than %d characters", MaxTaskChars)
	}
	if (e.Type == TypeClaimWrite || e.Type == TypeClaimPending || e.Type == TypeClaimRelease) && len(e.AttrStrings(AttrPaths)) > MaxPathsPerClaim {
		return fieldErr("attrs.paths", "names more than %d paths; split the claim", MaxPathsPerClaim)
	}
	if n := e.size(); n > MaxEventBytes {
		return fieldErr("event", "is %d bytes; an event is at most %d bytes", n, MaxEventBytes)
	}
	return nil
}

func validateAttr(k string, v any) error {
	if k == "" || len(k) > MaxTypeLen {
		return fieldErr("attrs", "has a key of %d bytes; keys are 1 to %d bytes", len(k), MaxTypeLen)
	}
	switch x := v.(type) {
	case string:
		if len(x) > MaxAttrStringLen {
			return fieldErr("attrs."+k, "is %d bytes; an attribute is at most %d", len(x), MaxAttrStringLen)
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fieldErr("attrs."+k, "is %v; a number must be finite", x)
		}
	case bool, int, int64, uint64, nil:
	case []string:
		for _, s := range x {
			if len(s) > MaxAttrStringLen {
				return fieldErr("attrs."+k, "holds a value over %d bytes", MaxAttrStringLen)
			}
		}
	default:
		return fieldErr("attrs."+k, "has type %T; attributes are strings, numbers, booleans or lists of strings", v)
	}
	return nil
}

// size is the length of the event's JSON encoding, or an upper bound of it
// when that bound is within MaxEventBytes. The bound counts six bytes per
// byte of text (the longest JSON escape, e.g. "<" as \u003c) and generous
// room for the fixed fields; only a larger event is encoded to measure it.
func (e *Event) size() int {
	text := len(e.ID) + len(e.SessionID) + len(e.ParentSessionID) + len(e.Type) + len(e.Agent) + len(e.Node)
	n := 512 + 32*len(e.Attrs)
	for k, v := range e.Attrs {
		text += len(k)
		switch x := v.(type) {
		case string:
			text += len(x)
		case []string:
			for _, s := range x {
				text += len(s)
			}
			n += 3 * len(x)
		}
	}
	if n += 6 * text; n <= MaxEventBytes {
		return n
	}
	b, err := json.Marshal(e)
	if err != nil {
		return MaxEventBytes + 1
	}
	return len(b)
}

// Less orders events by (ts, id), the order that defines a session's state.
func Less(a, b *Event) bool {
	if !a.TS.Equal(b.TS) {
		return a.TS.Before(b.TS)
	}
	return a.ID < b.ID
}

// SortEvents sorts events in place by (ts, id).
func SortEvents(evs []Event) {
	sort.SliceStable(evs, func(i, j int) bool { return Less(&evs[i], &evs[j]) })
}
