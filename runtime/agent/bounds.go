package agent

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Bounds limit what a model can make harn's loop hold or do. A model's
// output is an attacker's input: each bound is checked as the answer
// streams in, so that going over stops the read at once and nothing past
// the bound is kept.
type Bounds struct {
	// AnswerBytes bounds one streamed answer: its text, its tool calls'
	// names and arguments, and its reasoning. Default 4 MiB.
	AnswerBytes int
	// ToolCalls bounds the tool calls of one answer (one step). Default 64.
	ToolCalls int
	// Steps bounds the model calls of one task. Default 256.
	Steps int
	// ToolPreviewBytes bounds what the model sees of one tool result in
	// its context (a head and a tail around a reference that recall
	// takes); the whole output is stored. Default 8 KiB.
	ToolPreviewBytes int
}

// Defaults and ranges of Bounds.
const (
	DefaultAnswerBytes      = 4 << 20
	DefaultToolCalls        = 64
	DefaultMaxSteps         = 256
	DefaultToolPreviewBytes = 8 << 10

	MaxAnswerBytes      = 64 << 20
	MaxToolCalls        = 4096
	MaxMaxSteps         = 100_000
	MinToolPreviewBytes = 256
	MaxToolPreviewBytes = 1 << 20
)

// The node flags that set each bound (`harn node --FLAG`, HARN_FLAG in
// upper case, or the config file's key): what an error names as the fix.
const (
	FlagAnswerBytes      = "agent.max-answer-bytes"
	FlagToolCalls        = "agent.max-tool-calls"
	FlagSteps            = "agent.max-steps"
	FlagToolPreviewBytes = "agent.tool-preview-bytes"
)

// DefaultBounds returns the default bounds.
func DefaultBounds() Bounds {
	return Bounds{AnswerBytes: DefaultAnswerBytes, ToolCalls: DefaultToolCalls, Steps: DefaultMaxSteps,
		ToolPreviewBytes: DefaultToolPreviewBytes}
}

// Validate checks that every bound set is within its range (zero takes
// the default).
func (b Bounds) Validate() error {
	check := func(flag string, v, lo, hi int) error {
		if v != 0 && (v < lo || v > hi) {
			return fmt.Errorf("%w: --%s %d; give %d to %d", ErrBadConfig, flag, v, lo, hi)
		}
		return nil
	}
	return errors.Join(check(FlagAnswerBytes, b.AnswerBytes, 1, MaxAnswerBytes),
		check(FlagToolCalls, b.ToolCalls, 1, MaxToolCalls),
		check(FlagSteps, b.Steps, 1, MaxMaxSteps),
		check(FlagToolPreviewBytes, b.ToolPreviewBytes, MinToolPreviewBytes, MaxToolPreviewBytes))
}

// Norm fills the bounds left zero with their defaults.
func (b Bounds) Norm() Bounds {
	d := DefaultBounds()
	if b.AnswerBytes <= 0 {
		b.AnswerBytes = d.AnswerBytes
	}
	if b.ToolCalls <= 0 {
		b.ToolCalls = d.ToolCalls
	}
	if b.Steps <= 0 {
		b.Steps = d.Steps
	}
	if b.ToolPreviewBytes <= 0 {
		b.ToolPreviewBytes = d.ToolPreviewBytes
	}
	return b
}

// Errors of a bound a model went over; a *BoundError matches one.
var (
	ErrAnswerBound = errors.New("agent: the model's answer is over its bound")
	ErrCallsBound  = errors.New("agent: the model asked for more tool calls than one step may make")
	ErrStepsBound  = errors.New("agent: the task reached its bound of model calls")
)

// ErrSteps is ErrStepsBound (its older name).
var ErrSteps = ErrStepsBound

// BoundError says which bound a model went over, and how to raise it.
type BoundError struct {
	Kind  error // ErrAnswerBound, ErrCallsBound or ErrStepsBound
	Bound int
	Got   int // what the model sent (for tool calls, steps) or the bytes read when it stopped
}

func (e *BoundError) Error() string {
	switch e.Kind {
	case ErrCallsBound:
		return fmt.Sprintf("the model asked for %d tool calls in one step, over the bound of %d; harn stopped reading the answer (the bound is the node's --%s)",
			e.Got, e.Bound, FlagToolCalls)
	case ErrStepsBound:
		return fmt.Sprintf("the task reached its bound of %d model calls (the bound is the node's --%s)", e.Bound, FlagSteps)
	}
	return fmt.Sprintf("the model's answer passed %d bytes, the bound of one answer; harn stopped reading it (the bound is the node's --%s)",
		e.Bound, FlagAnswerBytes)
}

// Unwrap gives the kind.
func (e *BoundError) Unwrap() error { return e.Kind }

// class is the error class the ledger keeps for it.
func (e *BoundError) class() string {
	switch e.Kind {
	case ErrCallsBound:
		return "tool_calls_over_bound"
	case ErrStepsBound:
		return "steps_over_bound"
	}
	return "answer_over_bound"
}

// meter counts one answer as it streams in, against the bounds.
type meter struct {
	maxBytes, maxCalls int
	bytes              int
}

func newMeter(b Bounds) *meter {
	b = b.Norm()
	return &meter{maxBytes: b.AnswerBytes, maxCalls: b.ToolCalls}
}

// add counts n more bytes of the answer; over the bound it fails before
// they are kept.
func (m *meter) add(n int) error {
	m.bytes += n
	if m.bytes > m.maxBytes {
		return &BoundError{Kind: ErrAnswerBound, Bound: m.maxBytes, Got: m.bytes}
	}
	return nil
}

// calls checks the count of tool calls seen so far.
func (m *meter) calls(n int) error {
	if n > m.maxCalls {
		return &BoundError{Kind: ErrCallsBound, Bound: m.maxCalls, Got: n}
	}
	return nil
}

// check is the loop's own check of a provider's answer (a provider that
// does not meter its stream).
func (b Bounds) check(r Response) error {
	b = b.Norm()
	m := &meter{maxBytes: b.AnswerBytes, maxCalls: b.ToolCalls}
	if err := m.calls(len(r.Calls)); err != nil {
		return err
	}
	n := len(r.Text)
	for _, c := range r.Calls {
		n += len(c.ID) + len(c.Name) + len(c.Args)
	}
	return m.add(n)
}

// A model's HTTP stream is bounded below the decoder too: one server-sent
// event may hold at most streamEventFactor times the answer bound (a
// delta's JSON escapes each byte in at most 6), and the whole body
// streamBodyFactor times it (each tiny delta carries its envelope), so
// that neither a huge event nor an endless stream of empty ones is held
// or read without end.
const (
	streamEventFactor = 6
	streamBodyFactor  = 64
	streamSlack       = 64 << 10
)

// ErrStreamBound is a model stream over its byte bounds.
var ErrStreamBound = errors.New("agent: the model's stream is over its bound")

// boundStreams is the middleware that wraps each response body in a
// boundedBody.
func boundStreams(b Bounds) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	b = b.Norm()
	maxEvent := streamEventFactor*b.AnswerBytes + streamSlack
	maxBody := int64(streamBodyFactor)*int64(b.AnswerBytes) + streamSlack
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		resp, err := next(req)
		if err == nil && resp != nil && resp.Body != nil {
			resp.Body = &boundedBody{rc: resp.Body, maxEvent: maxEvent, maxBody: maxBody, answer: b.AnswerBytes}
		}
		return resp, err
	}
}

// boundedBody fails a read past maxBody bytes in all, or past maxEvent
// bytes since the last blank line (the end of a server-sent event).
type boundedBody struct {
	rc               io.ReadCloser
	maxEvent, answer int
	maxBody, total   int64
	event            int
	nl               bool // the last byte that was not \r was \n
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.total += int64(n)
	if b.total > b.maxBody {
		return 0, fmt.Errorf("%w: the stream passed %d bytes (%dx the node's --%s)",
			ErrStreamBound, b.maxBody, streamBodyFactor, FlagAnswerBytes)
	}
	for _, c := range p[:n] {
		switch {
		case c == '\n':
			if b.nl {
				b.event = 0
			}
			b.nl = true
		case c != '\r':
			b.nl = false
			if b.event++; b.event > b.maxEvent {
				return 0, &BoundError{Kind: ErrAnswerBound, Bound: b.answer, Got: b.event}
			}
		}
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
