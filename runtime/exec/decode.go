package exec

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/runtime"
)

// Bounds of the agent output decoders.
const (
	MaxLineBytes     = adapter.MaxLineBytes      // one stdout line; longer lines are skipped
	MaxEventsPerLine = adapter.MaxOutputsPerLine // pieces read from one line
	MaxToolIDBytes   = 256
	MaxToolNameBytes = 256
)

// EventKind says what one decoded piece of agent output is.
type EventKind = adapter.OutputKind

// The event kinds.
const (
	EventNone       = adapter.OutputNone       // nothing user-visible (init, usage, unknown types)
	EventText       = adapter.OutputText       // a user-visible assistant message
	EventToolUse    = adapter.OutputToolUse    // the agent started a tool call
	EventToolResult = adapter.OutputToolResult // a tool call ended
	EventResult     = adapter.OutputResult     // a turn ended, with its final text
	EventError      = adapter.OutputError      // the agent reported an error outside a turn's result
)

// Event is one decoded piece of agent output (adapter.Output). Decode
// bounds it: Text is valid UTF-8 of at most runtime.MaxTextBytes, ToolID
// and ToolName at most 256 bytes.
type Event = adapter.Output

// Decode decodes one stdout line with the driver's decoder (text lines
// without one), and bounds what it gives: at most MaxEventsPerLine events,
// each text and id clipped. A line that is not JSON in a JSON format is an
// ErrBadLine (the executor logs and skips it); unknown message types
// decode to no events.
func (d Driver) Decode(line []byte) ([]Event, error) {
	if d.Decoder == nil {
		return DecodeText(line), nil
	}
	evs, err := d.Decoder(line)
	if err != nil {
		return nil, err
	}
	if len(evs) > MaxEventsPerLine {
		evs = evs[:MaxEventsPerLine]
	}
	for i := range evs {
		e := &evs[i]
		e.Text, e.ToolID, e.ToolName = clipText(e.Text), clipID(e.ToolID, MaxToolIDBytes), clipID(e.ToolName, MaxToolNameBytes)
	}
	return evs, nil
}

// DecodeText reads a plain text line: a user-visible message unless blank.
func DecodeText(line []byte) []Event {
	s := clipText(strings.TrimRight(string(line), "\r\n"))
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return []Event{{Kind: EventText, Text: s}}
}

// clipText makes s valid UTF-8 of at most runtime.MaxTextBytes, cut on a
// rune boundary.
func clipText(s string) string { return clipID(s, runtime.MaxTextBytes) }

func clipID(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// lineReader reads lines of at most MaxLineBytes; the rest of a longer line
// is discarded and reported as ErrLineLong for that line.
type lineReader struct {
	r   *bufio.Reader
	buf []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its end, ErrLineLong for an overlong
// one (already skipped), or the reader's error (io.EOF at the end; a last
// line without a line break is returned first).
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	long := false
	for {
		frag, err := l.r.ReadSlice('\n')
		if !long {
			if len(l.buf)+len(frag) > MaxLineBytes+1 {
				long, l.buf = true, l.buf[:0]
			} else {
				l.buf = append(l.buf, frag...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && (long || len(l.buf) == 0):
			if long {
				return nil, ErrLineLong
			}
			return nil, err
		case err != nil:
			return l.buf, nil // the last line, without a line break
		case long:
			return nil, ErrLineLong
		}
		return bytes.TrimRight(l.buf, "\r\n"), nil
	}
}
