// Package callfacts is the room of what a waiting call asks, as the
// operator who approves it reads it: the whole command of a shell call
// and the directory it runs in, or the file a write changes and a
// unified diff of the change. The facts are read from the call's own
// input (an external agent's hook tool_input, through its adapter; harn's
// own call's arguments and the loop's preview), bounded and stripped of
// control characters (taskwire.Facts.Bounded). They live with the open
// request on the node that owns it and never enter presence or the
// registry.
package callfacts

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/runtime/agent/tools"
)

// Of is what an external agent's call of tool asks, read from input (the
// hook's tool_input) by the agent's adapter; cwd is the hook payload's
// working directory (else the session's). A tool that is neither a shell
// nor a write tool gives only the cwd: its input is the request's Detail.
func Of(agent, tool string, input []byte, cwd string) taskwire.Facts {
	a := all.Describe(agent, tool, input)
	f := taskwire.Facts{Command: a.Command, Cwd: cwd}
	if a.Dir != "" {
		f.Cwd = under(cwd, a.Dir)
	}
	if a.Path != "" {
		f.Path = under(cwd, a.Path)
	}
	var diff strings.Builder
	if a.Patch != "" {
		diff.WriteString(a.Patch)
	}
	for _, e := range a.Edits {
		if diff.Len() > taskwire.MaxDiff {
			break // the rest is cut anyway
		}
		diff.WriteString(tools.SnippetDiff(f.Path, e.Old, e.New))
	}
	f.Diff = diff.String()
	return f.Bounded()
}

// OfHarn is what a call of harn's own agent asks: the shell tool's
// command (args, the model's arguments as JSON), the write and edit
// tools' file, the diff the loop previewed (tools.Toolbox.Preview), and
// dir, the session's working directory.
func OfHarn(tool string, args []byte, diff, dir string) taskwire.Facts {
	var in struct {
		Command string `json:"command"`
		Path    string `json:"path"`
	}
	_ = json.Unmarshal(args, &in)
	f := taskwire.Facts{Cwd: dir}
	switch tool {
	case tools.ToolShell:
		f.Command = in.Command
	case tools.ToolWrite, tools.ToolEdit:
		f.Path, f.Diff = under(dir, in.Path), diff
	}
	return f.Bounded()
}

// under is p made absolute against dir when it is relative.
func under(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}
