// Package cli is harn's command line: the cobra commands beside the hook,
// the client's views of the node, as tables or --json. Its base (the
// root, finding and dialing the node, exit codes) is cli/hook's, which
// its commands call directly; harnd's flags and commands are cli/daemon's;
// the TUI is cli/tui's. os.Exit is never called here; Main returns the
// exit code.
package cli

import (
	"io"

	"github.com/harn-dev/harn/cli/hook"
)

// Main runs harn's command line (hook.Main with harn's command tree, set
// in this package's init) and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return hook.Main(args, stdin, stdout, stderr)
}
