package exec

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Input says how an agent command takes its input.
type Input uint8

// The input modes.
const (
	// InputText: the prompt is written to stdin, which is then closed.
	InputText Input = iota
	// InputStreamJSON: the prompt is the first JSON user message on stdin,
	// one per line (Claude Code's `--input-format stream-json`); steers are
	// further lines, and stdin is closed once every message has its result.
	InputStreamJSON
)

// Output says how an agent command's stdout is read.
type Output uint8

// The output formats.
const (
	// OutputText: each non-empty stdout line is a user-visible message.
	OutputText Output = iota
	// OutputClaudeStream: Claude Code's `--output-format stream-json`.
	OutputClaudeStream
	// OutputCodexJSON: the JSON lines of `codex exec --json`.
	OutputCodexJSON
)

// Driver describes how to run one agent CLI for a task: its command line,
// how it takes the prompt and steers, and how its output is read.
type Driver struct {
	Name   string   // "claude", "codex" or "generic": for logs and views
	Argv   []string // the command and its arguments; no shell is involved
	Input  Input
	Output Output
}

// Streaming reports whether steers can reach the running agent through its
// input. Without it, a steer becomes a follow-up task.
func (d Driver) Streaming() bool { return d.Input == InputStreamJSON }

// Validate checks that the driver names a command and known modes.
func (d Driver) Validate() error {
	if len(d.Argv) == 0 || d.Argv[0] == "" {
		return ErrNoCommand
	}
	if d.Input > InputStreamJSON || d.Output > OutputCodexJSON {
		return fmt.Errorf("%w: driver %q has an unknown input or output mode", ErrBadDriver, d.Name)
	}
	return nil
}

// Default command lines of the built-in drivers.
var (
	ClaudeArgv = []string{"claude", "-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}
	CodexArgv  = []string{"codex", "exec", "--json", "-"}
)

// Claude is Claude Code in headless mode with stream-json input and output:
// the prompt and every steer are JSON user messages on stdin. With no argv
// it runs ClaudeArgv.
func Claude(argv ...string) Driver {
	if len(argv) == 0 {
		argv = ClaudeArgv
	}
	return Driver{Name: "claude", Argv: clone(argv), Input: InputStreamJSON, Output: OutputClaudeStream}
}

// Codex is `codex exec --json`: the prompt on stdin, JSON lines out, no
// streaming input (a steer becomes a follow-up). With no argv it runs
// CodexArgv.
func Codex(argv ...string) Driver {
	if len(argv) == 0 {
		argv = CodexArgv
	}
	return Driver{Name: "codex", Argv: clone(argv), Input: InputText, Output: OutputCodexJSON}
}

// Generic runs any command: the prompt on stdin, each stdout line a
// user-visible message, no steering.
func Generic(argv ...string) Driver {
	return Driver{Name: "generic", Argv: clone(argv), Input: InputText, Output: OutputText}
}

// Detect picks the driver of a command line by its program name and flags:
// `claude` reads stream-json output when given `--output-format
// stream-json` and takes steers when also given `--input-format
// stream-json`; `codex` reads JSON lines when given `--json`; anything else
// is generic.
func Detect(argv []string) Driver {
	if len(argv) == 0 {
		return Generic()
	}
	switch strings.TrimSuffix(filepath.Base(argv[0]), ".exe") {
	case "claude":
		d := Driver{Name: "claude", Argv: clone(argv)}
		if flagValue(argv, "--output-format") == "stream-json" {
			d.Output = OutputClaudeStream
			if flagValue(argv, "--input-format") == "stream-json" {
				d.Input = InputStreamJSON
			}
		}
		return d
	case "codex":
		d := Driver{Name: "codex", Argv: clone(argv)}
		for _, a := range argv[1:] {
			if a == "--json" || a == "--experimental-json" {
				d.Output = OutputCodexJSON
			}
		}
		return d
	}
	return Generic(argv...)
}

// flagValue returns the value of a long flag given as `--f v` or `--f=v`.
func flagValue(argv []string, flag string) string {
	for i, a := range argv {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
		if a == flag && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return ""
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
	ErrBadLine    = errors.New("exec: malformed agent output line")
	ErrLineLong   = errors.New("exec: agent output line too long; skipped")
	ErrStopped    = errors.New("exec: the executor stopped")
)
