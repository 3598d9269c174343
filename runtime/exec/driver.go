package exec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// Driver describes how to run one agent CLI for a task: its command line,
// how it takes the prompt and steers, and how its output is read. An agent
// harn knows says it in its adapter (adapter.Driven.Headless, in
// presence/adapter/<agent>); Detect finds it there.
type Driver struct {
	Name string   // "claude", "codex" or "generic": for logs and views
	Argv []string // the command and its arguments; no shell is involved
	// Steer, when set, makes the agent streaming: the prompt and each
	// steer are input lines it encodes (adapter.Headless.Steer).
	Steer func(text string) []byte
	// Decoder reads one stdout line; nil reads text lines (DecodeText).
	Decoder func(line []byte) ([]adapter.Output, error)
}

// Streaming reports whether steers can reach the running agent through its
// input. Without it, a steer becomes a follow-up task.
func (d Driver) Streaming() bool { return d.Steer != nil }

// Validate checks that the driver names a command.
func (d Driver) Validate() error {
	if len(d.Argv) == 0 || d.Argv[0] == "" {
		return ErrNoCommand
	}
	return nil
}

// DriverOf is the driver of an agent's headless run.
func DriverOf(h adapter.Headless) Driver {
	return Driver{Name: h.Driver, Argv: clone(h.Argv), Steer: h.Steer, Decoder: h.Decode}
}

// Generic runs any command: the prompt on stdin, each stdout line a
// user-visible message, no steering.
func Generic(argv ...string) Driver {
	return Driver{Name: "generic", Argv: clone(argv)}
}

// Detect picks the driver of a command line by its program name: an agent
// harn knows (presence/adapter/all.Headless: `claude`, `codex`) runs as its
// adapter says, its flags choosing the modes; anything else is generic.
func Detect(argv []string) Driver {
	if h, ok := all.Headless(argv); ok {
		return DriverOf(h)
	}
	return Generic(argv...)
}

// Agent is the driver that runs the agent of the driver named name
// ("claude", "codex") under argv, whatever its program is called; ok is
// false for a name no adapter runs.
func Agent(name string, argv ...string) (Driver, bool) {
	d, ok := all.Driver(name)
	if !ok {
		return Driver{}, false
	}
	return DriverOf(d.Headless(argv)), true
}

func clone(s []string) []string { return append([]string(nil), s...) }

// Bounds of a command line.
const (
	MaxCommandBytes = 16 << 10
	MaxCommandWords = 256
)

// ParseCommand splits a command line (`--exec 'COMMAND'`) into words the
// way a POSIX shell does for quoting only: blanks separate words, single
// quotes keep everything literal, double quotes keep everything but `\"`,
// `\\`, `\$` and "\`" literal, and a backslash outside quotes escapes the
// next byte. Nothing is expanded: no variables, globs, pipes or
// redirections; a shell operator outside quotes is refused, so a command
// that needs one must name its shell (`sh -c '…'`).
func ParseCommand(s string) ([]string, error) {
	if len(s) > MaxCommandBytes {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrBadCommand, len(s), MaxCommandBytes)
	}
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
	)
	flush := func() error {
		if in {
			if len(words) == MaxCommandWords {
				return fmt.Errorf("%w: over %d words", ErrBadCommand, MaxCommandWords)
			}
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0 || c == '\n' || c == '\r':
			return nil, fmt.Errorf("%w: a NUL or line break at byte %d", ErrBadCommand, i)
		case c == ' ' || c == '\t':
			if err := flush(); err != nil {
				return nil, err
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("%w: unclosed single quote at byte %d", ErrBadCommand, i)
			}
			cur.WriteString(s[i+1 : i+1+j])
			in, i = true, i+1+j
		case c == '"':
			in = true
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == 0 || s[j] == '\n' || s[j] == '\r' {
					return nil, fmt.Errorf("%w: a NUL or line break at byte %d", ErrBadCommand, j)
				}
				if s[j] == '\\' && j+1 < len(s) && strings.IndexByte("\"\\$`", s[j+1]) >= 0 {
					j++
				}
				cur.WriteByte(s[j])
			}
			if j == len(s) {
				return nil, fmt.Errorf("%w: unclosed double quote at byte %d", ErrBadCommand, i)
			}
			i = j
		case c == '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("%w: a backslash ends the command", ErrBadCommand)
			}
			i++
			if s[i] == 0 || s[i] == '\n' || s[i] == '\r' {
				return nil, fmt.Errorf("%w: a NUL or line break at byte %d", ErrBadCommand, i)
			}
			cur.WriteByte(s[i])
			in = true
		case strings.IndexByte(";&|<>$`(){}*?[#~", c) >= 0 && !(in && (c == '#' || c == '~')):
			return nil, fmt.Errorf("%w: shell operator %q at byte %d; quote it, or run the command through `sh -c '…'`", ErrBadCommand, c, i)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, ErrNoCommand
	}
	return words, nil
}

// Sentinels of this package. Match them with errors.Is.
var (
	ErrNoCommand  = errors.New("exec: no agent command; give the command to run, for example `claude -p --output-format stream-json --input-format stream-json --verbose`")
	ErrBadCommand = errors.New("exec: bad command line")
	ErrBadDriver  = errors.New("exec: bad driver")
	ErrBadConfig  = errors.New("exec: bad executor configuration")
	ErrStart      = errors.New("exec: the agent command could not start")
	ErrBadLine    = adapter.ErrBadLine
	ErrLineLong   = adapter.ErrLineLong
	ErrStopped    = errors.New("exec: the executor stopped")
)
