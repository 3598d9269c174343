package taskwire

import (
	"github.com/harn-dev/harn/util/text"
)

// Bounds of a request's facts, in bytes.
const (
	// MaxCommand bounds a shell call's command.
	MaxCommand = 4 << 10
	// MaxDiff bounds a write's diff.
	MaxDiff = 8 << 10
	// MaxFactPath bounds a file's path and a cwd.
	MaxFactPath = 1 << 10
)

// Facts are what a call that waits for its operator asks, read from the
// call's own input (the hook's tool_input, or harn's own call's
// arguments): a shell call's whole command and the directory it runs in,
// or the file a write changes and a unified diff of the change. They
// live with the open request on the node that owns it, in memory, and
// never enter presence or the registry.
type Facts struct {
	Command string `json:"command,omitempty"`
	// CommandCut says that the command is longer than MaxCommand and only
	// its head is shown.
	CommandCut bool   `json:"command_cut,omitempty"`
	Cwd        string `json:"cwd,omitempty"`
	Path       string `json:"path,omitempty"`
	Diff       string `json:"diff,omitempty"`
	// DiffCut says that the diff is longer than MaxDiff.
	DiffCut bool `json:"diff_cut,omitempty"`
}

// Bounded is f made safe to show: every control character out, line by
// line (a command and a diff keep their lines; a path and a cwd are one
// line), and each cut to its bound at a character.
func (f Facts) Bounded() Facts {
	var cut bool
	f.Command, cut = text.CutBytes(text.Lines(f.Command), MaxCommand)
	f.CommandCut = f.CommandCut || cut
	f.Diff, cut = text.CutBytes(text.Lines(f.Diff), MaxDiff)
	f.DiffCut = f.DiffCut || cut
	f.Cwd, _ = text.CutBytes(text.Sanitize(f.Cwd), MaxFactPath)
	f.Path, _ = text.CutBytes(text.Sanitize(f.Path), MaxFactPath)
	return f
}

// Empty reports whether f says nothing of the call.
func (f Facts) Empty() bool { return f.Command == "" && f.Path == "" && f.Diff == "" }

// Summarized is r without the call in full: no command, file, diff or
// Detail (a command's arguments may hold a secret), for a reader who may
// not answer it. The cwd, the tool and the summary stay.
func (r Request) Summarized() Request {
	r.Detail = ""
	r.Facts = Facts{Cwd: r.Cwd}
	return r
}
