package exec

import (
	"errors"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/runtime/execwire"
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
	ErrBadLine    = adapter.ErrBadLine
	ErrLineLong   = adapter.ErrLineLong
	ErrStopped    = errors.New("exec: the executor stopped")
)
