package exec

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/harn-dev/harn/runtime/execwire"
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

// Bounds of a command line (execwire, which clients link without this
// package).
const (
	MaxCommandBytes = execwire.MaxCommandBytes
	MaxCommandWords = execwire.MaxCommandWords
)

// ParseCommand splits a command line into words as a POSIX shell quotes
// them, expanding nothing (execwire.ParseCommand).
func ParseCommand(s string) ([]string, error) { return execwire.ParseCommand(s) }

// Sentinels of this package. Match them with errors.Is.
var (
	ErrNoCommand  = execwire.ErrNoCommand
	ErrBadCommand = execwire.ErrBadCommand
	ErrBadDriver  = errors.New("exec: bad driver")
	ErrBadConfig  = errors.New("exec: bad executor configuration")
	ErrStart      = errors.New("exec: the agent command could not start")
	ErrBadLine    = errors.New("exec: malformed agent output line")
	ErrLineLong   = errors.New("exec: agent output line too long; skipped")
	ErrStopped    = errors.New("exec: the executor stopped")
)
