// Command harn is the presence and agent mesh for AI coding agents.
package main

import (
	"os"

	"github.com/harn-dev/harn/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
