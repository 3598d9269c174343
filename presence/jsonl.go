package presence

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrMalformedJSON is wrapped when a JSONL line cannot be decoded as one JSON
// object of the canonical event's shape.
var ErrMalformedJSON = errors.New("malformed JSON")

// LineError says which line of a JSONL stream was refused and why. Err wraps
// ErrInvalidEvent (usually through a *FieldError) or ErrMalformedJSON.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// LineIDFormat names an event that has no id after its line, so that a file
// folds the same way however often it is read.
const LineIDFormat = "line-%08d"

// DecodeJSONL reads canonical events, one JSON object per line. Blank lines
// are skipped. A line longer than MaxEventBytes is refused, never truncated,
// and so is every event that Validate refuses. An event without an id gets
// the deterministic id "line-%08d" of its line number (1-based).
//
// At the first bad line DecodeJSONL stops and returns the events before it
// with a *LineError; a read error other than io.EOF is returned as it is.
func DecodeJSONL(r io.Reader) ([]Event, error) {
	// The buffer holds a line of MaxEventBytes plus "\r\n"; ReadSlice
	// reports a longer line as bufio.ErrBufferFull before reading it all.
	br := bufio.NewReaderSize(r, MaxEventBytes+2)
	var evs []Event
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			return evs, &LineError{Line: n, Err: fieldErr("event", "line is longer than %d bytes; an event is at most %d bytes", MaxEventBytes, MaxEventBytes)}
		case err != nil && !errors.Is(err, io.EOF):
			return evs, err
		}
		last := err != nil
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > MaxEventBytes {
			return evs, &LineError{Line: n, Err: fieldErr("event", "line is %d bytes; an event is at most %d bytes", len(line), MaxEventBytes)}
		}
		if len(bytes.TrimSpace(line)) > 0 {
			e, err := decodeLine(line, n)
			if err != nil {
				return evs, &LineError{Line: n, Err: err}
			}
			evs = append(evs, e)
		}
		if last {
			return evs, nil
		}
	}
}

func decodeLine(line []byte, n int) (Event, error) {
	var e Event
	if err := e.UnmarshalJSON(line); err != nil {
		if errors.Is(err, ErrInvalidEvent) {
			return Event{}, err
		}
		return Event{}, fmt.Errorf("%w: %w", ErrMalformedJSON, err)
	}
	if e.ID == "" {
		e.ID = fmt.Sprintf(LineIDFormat, n)
	}
	if err := e.Validate(); err != nil {
		return Event{}, err
	}
	return e, nil
}

// FoldSessions folds each session of evs, grouped by session id. evs itself
// is left as it is.
func FoldSessions(evs []Event) map[string]State {
	groups := make(map[string][]Event)
	for i := range evs {
		groups[evs[i].SessionID] = append(groups[evs[i].SessionID], evs[i])
	}
	out := make(map[string]State, len(groups))
	for id, g := range groups {
		out[id] = Fold(g)
	}
	return out
}
