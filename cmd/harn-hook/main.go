// Command harn-hook is harn's hook alone: `harn-hook hook AGENT`, the
// command line that `harn hook install` writes into an agent's settings
// when harn-hook is beside harn. It links cli/hook, the hook and the
// command line's base, and not cli: the process that every tool call of
// every agent starts links neither the TUI, nor the rest of the command
// line, nor gRPC. `harn hook AGENT` runs the same code, slower to start.
package main

import (
	"os"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/util/procguard"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == procguard.Arg {
		// a tool's process group leader (util/procguard): the node runs
		// this small binary rather than itself, which starts in a tenth
		// of the time
		os.Exit(procguard.Main(os.Args[2:]))
	}
	os.Exit(hook.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
