// Package daemon is harnd's command line: the node's flags (every flag of
// `harn node`, each also HARN_… and a config-file key, read through
// cli/hook's settings), and the commands harnd runs in its own process —
// `node`, `mesh init`, and `token create` with no node running — on
// cli/hook's base (root, exit codes, config file). harn imports it for the
// same flags and help and runs harnd for the work; harnd (cmd/harnd)
// imports it with its Daemon, the work itself. It links no TUI and no
// server code: the node's stores are cmd/harnd's.
package daemon

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// The daemon, harnd, is a binary of its own (as tailscaled is beside
// tailscale): it links the node's stores (Pebble, raft, memberlist, OTel's
// SDK, Prometheus), harn does not. The commands whose work opens those
// stores (`harn node`, `harn mesh init`, `harn token create` with no node
// running) run harnd with the same arguments, and harnd runs them in its
// own process through a Daemon, with the flags defined here.

// Daemon is what harnd adds to the command line.
type Daemon struct {
	// RunNode runs `node` in the foreground until a signal.
	RunNode func(c *cobra.Command) error
	// InitMesh is `mesh init`'s work in dataDir; name "" is the default
	// node name. A config error comes back as a usage error (UsageErr).
	InitMesh func(dataDir, name string, a wire.TokenCreateArgs) (wire.MeshInit, error)
	// CreatePendingToken is `token create` with no node running.
	CreatePendingToken func(dataDir string, a wire.TokenCreateArgs) (wire.TokenCreated, error)
}

type daemonKey struct{}

// Of is the process's Daemon: nil in harn.
func Of(c *cobra.Command) *Daemon {
	d, _ := c.Context().Value(daemonKey{}).(*Daemon)
	return d
}

// Main is harnd's Main: harnd's command tree (node, mesh init, token
// create, version) with d's work run in this process.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, d *Daemon) int {
	hook.SetCommands(hook.Commands{
		Set:             func() []func() *cobra.Command { return []func() *cobra.Command{nodeCmd, meshCmd, tokenCmd} },
		HookSubcommands: func() []*cobra.Command { return nil },
		BareRoot:        func(c *cobra.Command) error { return c.Help() },
		ApplyExamples:   func(*cobra.Command) {},
	})
	return hook.Run(context.WithValue(context.Background(), daemonKey{}, d), args, stdin, stdout, stderr)
}

// nodeCmd, meshCmd and tokenCmd are harnd's commands: the same flags as
// harn's, without harn's client subcommands.
func nodeCmd() *cobra.Command { return NewNodeCmd() }

func meshCmd() *cobra.Command {
	c := &cobra.Command{Use: "mesh", Short: "the mesh: init (harn mesh has the rest)", Args: hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() }}
	c.AddCommand(NewMeshInitCmd())
	return c
}

func tokenCmd() *cobra.Command {
	c := &cobra.Command{Use: "token", Short: "join tokens: create with no node running (harn token has the rest)", Args: hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() }}
	c.AddCommand(NewTokenCreateCmd(nil))
	return c
}

// Exec runs harnd in place of this process with this command line.
func Exec(c *cobra.Command) error {
	p, err := hook.FindDaemon()
	if err != nil {
		return err
	}
	if strings.HasSuffix(os.Args[0], ".test") {
		// A test binary runs Main in-process: never replace it.
		return hook.WithCode(hook.ExitNoDaemon, fmt.Errorf("%w: a test runs `%s` in-process; run it through harnd", hook.ErrNoDaemon, c.CommandPath()))
	}
	return hook.ExecInPlace(p, append([]string{hook.DaemonName}, hook.RawArgs(c.Context())...))
}

// ConfigLaunchers are the config file's [launchers].
func ConfigLaunchers(c *cobra.Command) (taskwire.Launchers, error) {
	file, err := hook.LoadConfigFile(c)
	if err != nil {
		return nil, err
	}
	return file.Launchers, nil
}
