// Command harn is the presence and agent mesh for AI coding agents: the
// client (hooks, the command line, the terminal views). It links none of the
// node's stores; `harn node` runs the daemon, harnd.
package main

import (
	"os"

	"github.com/harn-dev/harn/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
