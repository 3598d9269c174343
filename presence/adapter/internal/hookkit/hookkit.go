// Package hookkit holds what the agent hook adapters share: lenient payload
// access, the event builder that stamps the common attributes, the
// permission request key, path cleaning for write claims, and the final
// validation that keeps every emitted event inside presence's limits.
package hookkit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
)

// Attribute keys the adapters set beside presence's well-known ones.
const (
	AttrNative           = "native"
	AttrAgentType        = "agent_type"
	AttrNotificationType = "notification_type"
	AttrTrigger          = "trigger"
)

// ErrNoClock is returned when an Input carries no Now: an adapter never
// reads the clock itself, so the caller must stamp the invocation.
var ErrNoClock = errors.New("hook input has no time: set Input.Now")

// Malformed wraps adapter.ErrMalformed with what was wrong.
func Malformed(format string, a ...any) error {
	return fmt.Errorf("%w: %s", adapter.ErrMalformed, fmt.Sprintf(format, a...))
}

// UnknownEvent is the error for a hook event name the adapter does not
// know: a diagnostic for `harn node errors`, never a session. An agent
// newer than harn may send one; the hook still answers its agent.
func UnknownEvent(native string) error {
	return Malformed("unknown hook event %q: this harn does not know it (update harn, or remove the event's hook entry)", Text(native, 64))
}

// Payload is one native hook payload, read leniently: a field of an
// unexpected type reads as absent, never as an error.
type Payload map[string]json.RawMessage

// Parse reads a hook payload: a JSON object of at most
// adapter.MaxInputBytes. Empty, oversized or non-object input is malformed.
func Parse(raw []byte) (Payload, error) {
	if len(raw) > adapter.MaxInputBytes {
		return nil, Malformed("payload is %d bytes; at most %d are read", len(raw), adapter.MaxInputBytes)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, Malformed("payload is empty; the agent passes its hook JSON on stdin")
	}
	var p Payload
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%w: payload is not a JSON object: %w", adapter.ErrMalformed, err)
	}
	if p == nil {
		return nil, Malformed("payload is null; a JSON object is expected")
	}
	// encoding/json reads invalid UTF-8, and escaped lone surrogates, as
	// U+FFFD: an id would be rewritten, not refused. Ids are checked on
	// their raw bytes.
	for _, k := range idFields {
		if raw, ok := p[k]; ok && !validJSONText(raw) {
			return nil, Malformed("%s is not valid UTF-8; send the agent's session id as text", k)
		}
	}
	return p, nil
}

// idFields are the payload fields that carry a session id, in every
// agent's hooks.
var idFields = []string{"session_id", "agent_id", "conversation_id", "subagent_id",
	"parent_conversation_id", "parent_session_id", "thread-id"}

// validJSONText reports whether raw, when it is a JSON string, decodes
// without a replacement: its bytes are valid UTF-8 and every U+FFFD in
// the decoded text was in the input (literally or as \ufffd), none made
// of invalid bytes or lone surrogate escapes. Raw that is not a string is
// valid (it reads as absent).
func validJSONText(raw json.RawMessage) bool {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return true
	}
	if !utf8.Valid(raw) {
		return false
	}
	const escaped = `\ufffd`
	decoded := strings.Count(s, "\uFFFD")
	if decoded == 0 {
		return true
	}
	given := strings.Count(string(raw), "\uFFFD") + strings.Count(strings.ToLower(string(raw)), escaped)
	return decoded <= given
}

// Str returns the string field k, or "".
func (p Payload) Str(k string) string {
	var s string
	if raw, ok := p[k]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// Bool returns the boolean field k, or false.
func (p Payload) Bool(k string) bool {
	var b bool
	if raw, ok := p[k]; ok && json.Unmarshal(raw, &b) == nil {
		return b
	}
	return false
}

// Strs returns the string-list field k; non-string elements are skipped.
func (p Payload) Strs(k string) []string {
	var arr []json.RawMessage
	if raw, ok := p[k]; !ok || json.Unmarshal(raw, &arr) != nil {
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, r := range arr {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// Raw returns the raw JSON of field k, or nil.
func (p Payload) Raw(k string) json.RawMessage { return p[k] }

// Obj returns field k as a payload when it is a JSON object, else nil.
func (p Payload) Obj(k string) Payload {
	var o Payload
	if raw, ok := p[k]; ok && json.Unmarshal(raw, &o) == nil {
		return o
	}
	return nil
}

// CanonicalJSON re-encodes raw with sorted object keys and no insignificant
// space, so that equal values give equal bytes. Absent or invalid input is
// "null".
func CanonicalJSON(raw json.RawMessage) []byte {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return []byte("null")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("null")
	}
	return b
}

// RequestKey names one permission request so that the post-use of the same
// tool call can resolve it: digest(tool + NUL + canonical(tool_input)). With
// no keyed digest it falls back to a plain SHA-256, so keys still match.
func RequestKey(digest func([]byte) string, tool string, input json.RawMessage) string {
	b := append([]byte(tool+"\x00"), CanonicalJSON(input)...)
	if digest != nil {
		return digest(b)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// CallKey names a tool call by the agent's own id for it (tool_use_id);
// "" when the payload has none (or one that cannot be an attribute).
func CallKey(toolUseID string) string {
	if id := Text(toolUseID, presence.MaxIDLen); id != "" {
		return "call:" + id
	}
	return ""
}

// AddCallKeys adds a tool call's keys to attrs: call_key (when the agent
// named the call), input_key (the digest of its tool and input) and, with
// request, request_key: the call key when there is one, else the input
// key. A request and its resolution then match by tool_use_id whenever the
// agent sends it, so a resolution whose tool_input lacks a field (a
// PostToolUse without "description") still answers its request.
func AddCallKeys(attrs map[string]any, digest func([]byte) string, tool string, input json.RawMessage, toolUseID string, request bool) {
	call, in := CallKey(toolUseID), RequestKey(digest, tool, input)
	if call != "" {
		attrs[presence.AttrCallKey] = call
	}
	attrs[presence.AttrInputKey] = in
	if request {
		attrs[presence.AttrRequestKey] = in
		if call != "" {
			attrs[presence.AttrRequestKey] = call
		}
	}
}

// CleanPath makes a claimed path absolute against cwd (when cwd is known and
// the path is relative) and cleans it. It returns "" for an empty path or one
// too long to be an attribute: such a path is skipped, never cut.
func CleanPath(cwd, p string) string {
	if strings.TrimSpace(p) == "" || strings.ContainsRune(p, 0) {
		return ""
	}
	if !filepath.IsAbs(p) && cwd != "" {
		p = filepath.Join(cwd, p)
	}
	p = filepath.Clean(p)
	if len(p) > presence.MaxAttrStringLen || !utf8.ValidString(p) {
		return ""
	}
	return p
}

// Text returns s when it fits an attribute of at most max bytes (and is
// non-empty valid text), else "" so that the attribute is left out.
func Text(s string, max int) string {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return ""
	}
	return s
}

// Reason returns s when it fits a reason attribute (at most
// presence.MaxReasonChars characters), else "".
func Reason(s string) string {
	if utf8.RuneCountInString(s) > presence.MaxReasonChars {
		return ""
	}
	return Text(s, presence.MaxAttrStringLen)
}

// Builder collects the events of one invocation and stamps the attributes
// every event carries: native, cwd and digest.
type Builder struct {
	Agent  string
	Native string
	TS     time.Time
	Cwd    string
	Digest string
	Events []presence.Event
}

// NewBuilder starts the events of one invocation. digest is the keyed
// digest of the raw payload ("" when the input has no digest function).
func NewBuilder(agent, native string, ts time.Time, cwd string, in adapter.Input) *Builder {
	b := &Builder{Agent: agent, Native: native, TS: ts, Cwd: Text(cwd, presence.MaxAttrStringLen)}
	if in.Digest != nil {
		b.Digest = in.Digest(in.Stdin)
	}
	return b
}

// Add appends one event. attrs are set after the common ones; an empty
// string value leaves its key out.
func (b *Builder) Add(typ, session, parent string, attrs map[string]any) {
	e := presence.Event{SessionID: session, ParentSessionID: parent, Type: typ, TS: b.TS, Agent: b.Agent}
	if n := Text(b.Native, presence.MaxTypeLen); n != "" {
		e.SetAttr(AttrNative, n)
	}
	if b.Cwd != "" {
		e.SetAttr(presence.AttrCwd, b.Cwd)
	}
	if b.Digest != "" {
		e.SetAttr(presence.AttrDigest, b.Digest)
	}
	for k, v := range attrs {
		if s, ok := v.(string); ok && s == "" {
			continue
		}
		if ss, ok := v.([]string); ok && len(ss) == 0 {
			continue
		}
		e.SetAttr(k, v)
	}
	b.Events = append(b.Events, e)
}

// claimBudget keeps one claim event well inside presence.MaxEventBytes.
const claimBudget = presence.MaxEventBytes / 2

// AddClaims appends claim.write events for paths (already cleaned),
// splitting them so that no event names more than presence.MaxPathsPerClaim
// paths or outgrows the event size limit. Duplicates and empty paths are
// dropped.
func (b *Builder) AddClaims(session, parent string, paths []string, attrs map[string]any) {
	seen := make(map[string]bool, len(paths))
	var chunk []string
	size := 0
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		a := map[string]any{presence.AttrPaths: chunk}
		for k, v := range attrs {
			a[k] = v
		}
		b.Add(presence.TypeClaimWrite, session, parent, a)
		chunk, size = nil, 0
	}
	for _, p := range paths {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		if len(chunk) == presence.MaxPathsPerClaim || size+len(p)+3 > claimBudget {
			flush()
		}
		chunk = append(chunk, p)
		size += len(p) + 3
	}
	flush()
}

// Result validates every event and returns the result. An event that would
// not validate makes the whole input malformed: nothing half-made is sent.
func (b *Builder) Result(session string, wantsContext bool) (adapter.Result, error) {
	for i := range b.Events {
		if err := b.Events[i].Validate(); err != nil {
			return adapter.Result{}, fmt.Errorf("%w: %s event: %w", adapter.ErrMalformed, b.Native, err)
		}
	}
	return adapter.Result{Native: b.Native, SessionID: session, Events: b.Events, WantsContext: wantsContext}, nil
}

// CheckSession reports whether id can be a session id, naming field when not.
func CheckSession(field, id string) error {
	switch {
	case id == "":
		return Malformed("%s is missing; the hook cannot tell which session this is", field)
	case len(id) > presence.MaxIDLen || !utf8.ValidString(id) || strings.ContainsAny(id, "\x00/\n"):
		return Malformed("%s %.40q is not a usable session id (at most %d bytes, no '/', NUL or newline)", field, id, presence.MaxIDLen)
	}
	return nil
}

// Timestamp parses an RFC 3339 timestamp, or returns fallback when s is
// empty or unparsable.
func Timestamp(s string, fallback time.Time) time.Time {
	if s == "" {
		return fallback
	}
	t, err := presence.ParseTime(s)
	if err != nil || t.IsZero() || t.Year() < 1 || t.Year() > 9999 {
		return fallback
	}
	return t
}

// Begin reads what every hook payload of the Claude Code, Cursor and Gemini
// families starts with: a JSON object (see Parse) naming its event in
// hook_event_name.
func Begin(raw []byte) (Payload, string, error) {
	p, err := Parse(raw)
	if err != nil {
		return nil, "", err
	}
	native := p.Str("hook_event_name")
	if native == "" {
		return nil, "", Malformed("hook_event_name is missing; the payload names no event")
	}
	return p, native, nil
}
