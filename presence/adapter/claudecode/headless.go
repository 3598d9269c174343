package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/harn-dev/harn/presence/adapter"
)

// Argv is Claude Code's default command line as a task's command: headless,
// with stream-json input and output.
var Argv = []string{"claude", "-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}

// Headless is Claude Code run under argv (adapter.Driven): with
// `--output-format stream-json` its output is read as stream-json
// (DecodeStream), and with `--input-format stream-json` as well the prompt
// and every steer are JSON user messages on stdin (StreamLine). Without
// them its output is text and it takes no steers. An empty argv runs Argv.
func (claudeCode) Headless(argv []string) adapter.Headless {
	if len(argv) == 0 {
		argv = Argv
	}
	h := adapter.Headless{Driver: "claude", Argv: append([]string(nil), argv...)}
	if adapter.FlagValue(argv, "--output-format") == "stream-json" {
		h.Decode = DecodeStream
		if adapter.FlagValue(argv, "--input-format") == "stream-json" {
			h.Steer = StreamLine
		}
	}
	return h
}

// StreamLine is one stream-json input line: a user message with text, as
// Claude Code's headless mode reads it.
func StreamLine(text string) []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	b, _ := json.Marshal(struct {
		Type    string  `json:"type"`
		Message message `json:"message"`
	}{Type: "user", Message: message{Role: "user", Content: text}})
	return append(b, '\n')
}

// streamLine is the part of a Claude Code stream-json line harn reads:
// system init, assistant and user messages, and the result.
type streamLine struct {
	Type    string          `json:"type"`
	Subtype string          `json:"subtype"`
	IsError bool            `json:"is_error"`
	Result  *string         `json:"result"`
	Message json.RawMessage `json:"message"`
}

type streamMessage struct {
	Content json.RawMessage `json:"content"`
}

type streamBlock struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
}

// DecodeStream reads one line of Claude Code's `--output-format
// stream-json`: assistant text blocks are messages, tool_use blocks start
// calls, tool_result blocks in user messages end them, and the result line
// ends a turn (an error subtype or is_error marks a failed turn). At most
// adapter.MaxOutputsPerLine pieces come of one line.
func DecodeStream(line []byte) ([]adapter.Output, error) {
	var l streamLine
	if err := adapter.DecodeLine(line, &l); err != nil {
		return nil, err
	}
	switch l.Type {
	case "assistant", "user":
		blocks, text, err := streamContent(l.Message)
		if err != nil {
			return nil, err
		}
		var out []adapter.Output
		if l.Type == "assistant" && strings.TrimSpace(text) != "" {
			out = append(out, adapter.Output{Kind: adapter.OutputText, Text: text})
		}
		for _, b := range blocks {
			if len(out) == adapter.MaxOutputsPerLine {
				break
			}
			switch {
			case l.Type == "assistant" && b.Type == "text" && strings.TrimSpace(b.Text) != "":
				out = append(out, adapter.Output{Kind: adapter.OutputText, Text: b.Text})
			case l.Type == "assistant" && b.Type == "tool_use" && b.ID != "":
				out = append(out, adapter.Output{Kind: adapter.OutputToolUse, ToolID: b.ID, ToolName: b.Name})
			case l.Type == "user" && b.Type == "tool_result" && b.ToolUseID != "":
				out = append(out, adapter.Output{Kind: adapter.OutputToolResult, ToolID: b.ToolUseID, IsError: b.IsError})
			}
		}
		return out, nil
	case "result":
		o := adapter.Output{Kind: adapter.OutputResult, IsError: l.IsError || strings.HasPrefix(l.Subtype, "error")}
		if l.Result != nil {
			o.Text = *l.Result
		}
		return []adapter.Output{o}, nil
	}
	return nil, nil
}

// streamContent reads a message's content: a string, or an array of
// blocks.
func streamContent(raw json.RawMessage) ([]streamBlock, string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", nil
	}
	var m streamMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", fmt.Errorf("%w: message: %w", adapter.ErrBadLine, err)
	}
	c := bytes.TrimSpace(m.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
		return nil, "", nil
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, "", fmt.Errorf("%w: content: %w", adapter.ErrBadLine, err)
		}
		return nil, s, nil
	}
	var blocks []streamBlock
	if err := json.Unmarshal(c, &blocks); err != nil {
		return nil, "", fmt.Errorf("%w: content: %w", adapter.ErrBadLine, err)
	}
	return blocks, "", nil
}
