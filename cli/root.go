// Package cli is harn's command line: cobra commands, the client that finds
// or starts the local node, and output as tables or --json. os.Exit is never
// called here; Main returns the exit code.
package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set by the linker (see Makefile).
var (
	version = "dev"
	commit  = "unknown"
)

func init() {
	// A plain `go build` carries the commit in its build info; the
	// Makefile's linker flags take precedence.
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	if commit != "unknown" {
		return
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
			if len(commit) > 12 {
				commit = commit[:12]
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && commit != "unknown" {
		commit += "-dirty"
	}
}

// Version is the build's version string.
func Version() string { return version }

// Commit is the commit the build came from.
func Commit() string { return commit }

// Main runs the command line and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	code := ExitCode(err)
	var silent *silentError
	if !errors.As(err, &silent) {
		fmt.Fprintln(stderr, "harn: "+oneLine(err.Error()))
	}
	// A hook never fails its agent, which reads exit 2 as "block this
	// action": bad flags, environment or config still exit 0.
	if cmd != nil && cmd.Name() == "hook" && cmd.Parent() == root {
		return ExitOK
	}
	return code
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "harn",
		Short:         "presence and agent mesh for AI coding agents",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr(fmt.Errorf("unknown command %q; run `harn --help` for the list", args[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	addPlaceFlags(root)
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return applySettings(c) }
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr(err)
	})
	root.AddCommand(newVersionCmd())
	for _, add := range commandSet {
		root.AddCommand(add())
	}
	return root
}

// commandSet holds the constructors of the top-level commands other than
// version; each file registers its own in init.
var commandSet []func() *cobra.Command

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version and the commit it was built from",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintf(c.OutOrStdout(), "harn %s (commit %s)\n", version, commit)
			return nil
		},
	}
}

// noArgs is cobra.NoArgs with the usage exit code: an unknown subcommand
// or a stray argument is bad input (exit 2), not an unexpected failure.
func noArgs(c *cobra.Command, args []string) error { return usageErr(cobra.NoArgs(c, args)) }
