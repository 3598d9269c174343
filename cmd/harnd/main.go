// Command harnd is harn's daemon: the node of this machine (its ledger,
// the mesh's gossip and registry, the board, tracing and metrics), and the
// offline operations on its data dir (`mesh init`, `token create` with no
// node running). `harn node ...` runs it, found beside harn or on PATH; run
// directly, it takes the same command line for those commands (`harnd node
// [flags]`, `harnd mesh init`, `harnd token create`), defined in cli/daemon
// with harn's: harnd links no other part of harn's command line, and no TUI.
package main

import (
	"os"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/util/procguard"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == procguard.Arg {
		// a tool's process group leader (see util/procguard)
		os.Exit(procguard.Main(os.Args[2:]))
	}
	os.Exit(daemon.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, work()))
}
