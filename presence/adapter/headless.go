package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Headless is how an agent runs as a task's command (runtime/exec runs
// it; Driven.Headless says how): its driver name, its command line, how it
// takes steers, and how its stdout is read.
type Headless struct {
	// Driver names the way it runs ("claude", "codex"): for logs, views
	// and the catalog (Driven.Drivers).
	Driver string
	// Argv is the command line; no shell is involved.
	Argv []string
	// Steer, when set, is one input line of a streaming agent carrying
	// text: the prompt is the first, each steer another, and stdin stays
	// open until every message has its turn's result. Without it the
	// prompt goes on stdin, then EOF, and a steer becomes a follow-up.
	Steer func(text string) []byte
	// Decode reads one stdout line into what it shows; nil: each
	// non-blank line is a message. It does not bound its output's texts
	// (the executor does).
	Decode func(line []byte) ([]Output, error)
}

// OutputKind says what one decoded piece of agent output is.
type OutputKind uint8

// The output kinds.
const (
	OutputNone       OutputKind = iota // nothing user-visible (init, usage, unknown types)
	OutputText                         // a user-visible assistant message
	OutputToolUse                      // the agent started a tool call
	OutputToolResult                   // a tool call ended
	OutputResult                       // a turn ended, with its final text
	OutputError                        // the agent reported an error outside a turn's result
)

func (k OutputKind) String() string {
	switch k {
	case OutputText:
		return "text"
	case OutputToolUse:
		return "tool_use"
	case OutputToolResult:
		return "tool_result"
	case OutputResult:
		return "result"
	case OutputError:
		return "error"
	}
	return "none"
}

// Output is one decoded piece of agent output. ToolID is the agent's own
// call id (Claude Code's tool_use_id, which its hooks carry too).
type Output struct {
	Kind     OutputKind
	Text     string
	ToolID   string
	ToolName string
	IsError  bool
}

// Bounds of a headless agent's output.
const (
	MaxLineBytes      = 1 << 20 // one stdout line; longer lines are skipped
	MaxOutputsPerLine = 64      // pieces read from one line
)

// Errors of a headless agent's output.
var (
	ErrBadLine  = errors.New("exec: malformed agent output line")
	ErrLineLong = errors.New("exec: agent output line too long; skipped")
)

// DecodeLine reads one JSON object line into v: ErrLineLong over
// MaxLineBytes, ErrBadLine when it is not a JSON object.
func DecodeLine(line []byte, v any) error {
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

// FlagValue returns the value of a long flag in argv, given as `--f v` or
// `--f=v` ("" when absent).
func FlagValue(argv []string, flag string) string {
	for i, a := range argv {
		if len(a) > len(flag) && a[:len(flag)] == flag && a[len(flag)] == '=' {
			return a[len(flag)+1:]
		}
		if a == flag && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return ""
}
