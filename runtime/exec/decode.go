package exec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/harn-dev/harn/runtime"
)

// Bounds of the agent output decoders.
const (
	MaxLineBytes     = 1 << 20 // one stdout line; longer lines are skipped
	MaxEventsPerLine = 64      // content blocks read from one line
	MaxToolIDBytes   = 256
	MaxToolNameBytes = 256
)

// EventKind says what one decoded piece of agent output is.
type EventKind uint8

// The event kinds.
const (
	EventNone       EventKind = iota // nothing user-visible (init, usage, unknown types)
	EventText                        // a user-visible assistant message
	EventToolUse                     // the agent started a tool call
	EventToolResult                  // a tool call ended
	EventResult                      // a turn ended, with its final text
	EventError                       // the agent reported an error outside a turn's result
)

func (k EventKind) String() string {
	switch k {
	case EventText:
		return "text"
	case EventToolUse:
		return "tool_use"
	case EventToolResult:
		return "tool_result"
	case EventResult:
		return "result"
	case EventError:
		return "error"
	}
	return "none"
}

// Event is one decoded piece of agent output. Text is valid UTF-8 of at
// most runtime.MaxTextBytes; ToolID is the agent's own call id (Claude
// Code's tool_use_id, which its hooks carry too).
type Event struct {
	Kind     EventKind
	Text     string
	ToolID   string
	ToolName string
	IsError  bool
}

// Decode decodes one stdout line in the driver's output format. A line
// that is not JSON in a JSON format is an ErrBadLine (the executor logs and
// skips it); unknown message types decode to no events.
func (d Driver) Decode(line []byte) ([]Event, error) {
	switch d.Output {
	case OutputClaudeStream:
		return DecodeClaude(line)
	case OutputCodexJSON:
		return DecodeCodex(line)
	}
	return DecodeText(line), nil
}

// DecodeText reads a plain text line: a user-visible message unless blank.
func DecodeText(line []byte) []Event {
	s := clipText(strings.TrimRight(string(line), "\r\n"))
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return []Event{{Kind: EventText, Text: s}}
}

// claudeLine is the part of a Claude Code stream-json line the executor
// reads: system init, assistant and user messages, and the result.
type claudeLine struct {
	Type    string          `json:"type"`
	Subtype string          `json:"subtype"`
	IsError bool            `json:"is_error"`
	Result  *string         `json:"result"`
	Message json.RawMessage `json:"message"`
}

type claudeMessage struct {
	Content json.RawMessage `json:"content"`
}

type claudeBlock struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
}

// DecodeClaude reads one line of Claude Code's `--output-format
// stream-json`: assistant text blocks are messages, tool_use blocks start
// calls, tool_result blocks in user messages end them, and the result line
// ends a turn (an error subtype or is_error marks a failed turn).
func DecodeClaude(line []byte) ([]Event, error) {
	var l claudeLine
	if err := decodeJSON(line, &l); err != nil {
		return nil, err
	}
	switch l.Type {
	case "assistant", "user":
		blocks, text, err := claudeContent(l.Message)
		if err != nil {
			return nil, err
		}
		var out []Event
		if l.Type == "assistant" && strings.TrimSpace(text) != "" {
			out = append(out, Event{Kind: EventText, Text: clipText(text)})
		}
		for _, b := range blocks {
			if len(out) == MaxEventsPerLine {
				break
			}
			switch {
			case l.Type == "assistant" && b.Type == "text" && strings.TrimSpace(b.Text) != "":
				out = append(out, Event{Kind: EventText, Text: clipText(b.Text)})
			case l.Type == "assistant" && b.Type == "tool_use" && b.ID != "":
				out = append(out, Event{Kind: EventToolUse, ToolID: clipID(b.ID, MaxToolIDBytes), ToolName: clipID(b.Name, MaxToolNameBytes)})
			case l.Type == "user" && b.Type == "tool_result" && b.ToolUseID != "":
				out = append(out, Event{Kind: EventToolResult, ToolID: clipID(b.ToolUseID, MaxToolIDBytes), IsError: b.IsError})
			}
		}
		return out, nil
	case "result":
		ev := Event{Kind: EventResult, IsError: l.IsError || strings.HasPrefix(l.Subtype, "error")}
		if l.Result != nil {
			ev.Text = clipText(*l.Result)
		}
		return []Event{ev}, nil
	}
	return nil, nil
}

// claudeContent reads a message's content: a string, or an array of blocks.
func claudeContent(raw json.RawMessage) ([]claudeBlock, string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", nil
	}
	var m claudeMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", fmt.Errorf("%w: message: %w", ErrBadLine, err)
	}
	c := bytes.TrimSpace(m.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
		return nil, "", nil
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, "", fmt.Errorf("%w: content: %w", ErrBadLine, err)
		}
		return nil, s, nil
	}
	var blocks []claudeBlock
	if err := json.Unmarshal(c, &blocks); err != nil {
		return nil, "", fmt.Errorf("%w: content: %w", ErrBadLine, err)
	}
	return blocks, "", nil
}

// codexLine is the part of a `codex exec --json` line the executor reads,
// in the current thread/turn/item form and in the older {"msg": …} form.
type codexLine struct {
	Type    string     `json:"type"`
	Item    *codexItem `json:"item"`
	Message string     `json:"message"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
	Msg *struct {
		Type             string `json:"type"`
		Message          string `json:"message"`
		LastAgentMessage string `json:"last_agent_message"`
	} `json:"msg"`
}

type codexItem struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	ItemType string `json:"item_type"`
	Text     string `json:"text"`
	Status   string `json:"status"`
	Tool     string `json:"tool"`
}

// DecodeCodex reads one line of `codex exec --json`: a completed
// agent_message item is a message; command, patch and MCP items start and
// end calls; turn.completed and turn.failed end the turn; error lines are
// errors. The older form ({"msg":{"type":"agent_message"…}} and
// task_complete) is read too.
func DecodeCodex(line []byte) ([]Event, error) {
	var l codexLine
	if err := decodeJSON(line, &l); err != nil {
		return nil, err
	}
	if l.Msg != nil && l.Type == "" {
		switch l.Msg.Type {
		case "agent_message":
			if strings.TrimSpace(l.Msg.Message) != "" {
				return []Event{{Kind: EventText, Text: clipText(l.Msg.Message)}}, nil
			}
		case "task_complete":
			return []Event{{Kind: EventResult, Text: clipText(l.Msg.LastAgentMessage)}}, nil
		case "error":
			return []Event{{Kind: EventError, Text: clipText(l.Msg.Message)}}, nil
		}
		return nil, nil
	}
	switch l.Type {
	case "item.started", "item.completed":
		if l.Item == nil {
			return nil, nil
		}
		typ := l.Item.Type
		if typ == "" {
			typ = l.Item.ItemType
		}
		switch typ {
		case "agent_message", "assistant_message":
			if l.Type == "item.completed" && strings.TrimSpace(l.Item.Text) != "" {
				return []Event{{Kind: EventText, Text: clipText(l.Item.Text)}}, nil
			}
		case "command_execution", "file_change", "mcp_tool_call", "web_search":
			if l.Item.ID == "" {
				return nil, nil
			}
			name := typ
			if l.Item.Tool != "" {
				name = l.Item.Tool
			}
			ev := Event{Kind: EventToolUse, ToolID: clipID(l.Item.ID, MaxToolIDBytes), ToolName: clipID(name, MaxToolNameBytes)}
			if l.Type == "item.completed" {
				ev.Kind, ev.IsError = EventToolResult, l.Item.Status == "failed"
			}
			return []Event{ev}, nil
		}
	case "turn.completed":
		return []Event{{Kind: EventResult}}, nil
	case "turn.failed":
		ev := Event{Kind: EventResult, IsError: true}
		if l.Error != nil {
			ev.Text = clipText(l.Error.Message)
		}
		return []Event{ev}, nil
	case "error":
		return []Event{{Kind: EventError, Text: clipText(l.Message)}}, nil
	}
	return nil, nil
}

func decodeJSON(line []byte, v any) error {
	line = bytes.TrimSpace(line)
	if len(line) > MaxLineBytes {
		return ErrLineLong
	}
	if len(line) == 0 || line[0] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrBadLine)
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadLine, err)
	}
	return nil
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
