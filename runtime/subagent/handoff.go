package subagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/harn-dev/harn/util/text"
)

// Bounds of a handoff: what a parent's context takes from one child.
const (
	MaxHandoffBytes = 16 << 10
	maxItems        = 64
	maxItemChars    = 1000
	maxVerifyChars  = 4000
)

// The handoff statuses.
const (
	HandoffDone    = "done"    // the brief is done
	HandoffPartial = "partial" // some of it is done; unresolved says what is not
	HandoffBlocked = "blocked" // nothing more can be done without the parent
	HandoffFailed  = "failed"  // the child could not do it
)

// Handoff is what a child reports to its parent, and all the parent
// receives of the child's run.
type Handoff struct {
	Status       string   `json:"status"`
	Changes      []string `json:"changes"`
	Verification string   `json:"verification"`
	Unresolved   []string `json:"unresolved"`
}

// HandoffSchema is the JSON schema a handoff is validated against; it is
// also the `handoff` tool's argument schema.
const HandoffSchema = `{"type":"object","properties":{` +
	`"status":{"type":"string","enum":["done","partial","blocked","failed"],"description":"how the brief ended"},` +
	`"changes":{"type":"array","maxItems":64,"items":{"type":"string","minLength":1,"maxLength":1000},"description":"what you changed: one entry per file or change; empty when nothing changed"},` +
	`"verification":{"type":"string","minLength":1,"maxLength":4000,"description":"how you checked the work (commands run and their result), or why it could not be checked"},` +
	`"unresolved":{"type":"array","maxItems":64,"items":{"type":"string","minLength":1,"maxLength":1000},"description":"what is left open; empty when nothing is"}},` +
	`"required":["status","changes","verification","unresolved"],"additionalProperties":false}`

var handoffSchema = func() *jsonschema.Resolved {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(HandoffSchema), &s); err != nil {
		panic("subagent: bad handoff schema: " + err.Error())
	}
	r, err := s.Resolve(nil)
	if err != nil {
		panic("subagent: bad handoff schema: " + err.Error())
	}
	return r
}()

// ErrInvalidHandoff is a handoff that does not meet HandoffSchema.
var ErrInvalidHandoff = errors.New("subagent: invalid handoff")

// ParseHandoff decodes and validates a child's handoff arguments. The
// error wraps ErrInvalidHandoff and says what is wrong, for the child's
// model. The texts come back sanitized (no control characters).
func ParseHandoff(raw []byte) (Handoff, error) {
	if len(raw) > MaxHandoffBytes {
		return Handoff{}, fmt.Errorf("%w: %d bytes, over %d", ErrInvalidHandoff, len(raw), MaxHandoffBytes)
	}
	var inst any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&inst); err != nil {
		return Handoff{}, fmt.Errorf("%w: not a JSON object: %s", ErrInvalidHandoff, text.Clip(text.OneLine(err.Error()), 200))
	}
	if _, ok := inst.(map[string]any); !ok {
		return Handoff{}, fmt.Errorf("%w: not a JSON object", ErrInvalidHandoff)
	}
	if err := handoffSchema.Validate(inst); err != nil {
		return Handoff{}, fmt.Errorf("%w: %s", ErrInvalidHandoff, text.Clip(text.OneLine(err.Error()), 500))
	}
	var h Handoff
	if err := json.Unmarshal(raw, &h); err != nil {
		return Handoff{}, fmt.Errorf("%w: %s", ErrInvalidHandoff, text.Clip(text.OneLine(err.Error()), 200))
	}
	if strings.TrimSpace(h.Verification) == "" {
		return Handoff{}, fmt.Errorf("%w: verification is blank", ErrInvalidHandoff)
	}
	h.Verification = text.Sanitize(h.Verification)
	for i := range h.Changes {
		h.Changes[i] = text.Sanitize(h.Changes[i])
	}
	for i := range h.Unresolved {
		h.Unresolved[i] = text.Sanitize(h.Unresolved[i])
	}
	if h.Changes == nil {
		h.Changes = []string{}
	}
	if h.Unresolved == nil {
		h.Unresolved = []string{}
	}
	return h, nil
}
