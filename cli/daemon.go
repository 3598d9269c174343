package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// The daemon, harnd, is a binary of its own (as tailscaled is beside
// tailscale): it links the node's stores (Pebble, raft, memberlist, OTel's
// SDK, Prometheus), harn does not. The command line is one tree in both:
// the commands whose work opens those stores (`harn node`, `harn mesh
// init`, `harn token create` with no node running) run harnd with the same
// arguments, and harnd runs them in its own process through a Daemon.

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

// daemonOf is the process's Daemon: nil in harn.
func daemonOf(c *cobra.Command) *Daemon {
	d, _ := c.Context().Value(daemonKey{}).(*Daemon)
	return d
}

// DaemonMain is harnd's Main: the command line with d's commands run in
// this process.
func DaemonMain(args []string, stdin io.Reader, stdout, stderr io.Writer, d *Daemon) int {
	return run(context.WithValue(context.Background(), daemonKey{}, d), args, stdin, stdout, stderr)
}

// execDaemon runs harnd in place of this process with this command line.
func execDaemon(c *cobra.Command) error {
	p, err := findDaemon()
	if err != nil {
		return err
	}
	if strings.HasSuffix(os.Args[0], ".test") {
		// A test binary runs Main in-process: never replace it.
		return withCode(ExitNoDaemon, fmt.Errorf("%w: a test runs `%s` in-process; run it through harnd", ErrNoDaemon, c.CommandPath()))
	}
	return execInPlace(p, append([]string{DaemonName}, rawArgs(c.Context())...))
}

// UsageErr is a usage error (exit 2), for harnd's commands.
func UsageErr(err error) error { return usageErr(err) }

// WithCode gives err the exit code code, for harnd's commands.
func WithCode(code int, err error) error { return withCode(code, err) }

// PlaceOf is the data dir and socket a command names (flags, environment,
// config file, defaults).
func PlaceOf(c *cobra.Command) (dataDir, socket string) {
	p := placeOf(c)
	return p.DataDir, p.Socket
}

// ReadSecretFile reads a secret from a file that must be private (exit 13
// otherwise).
func ReadSecretFile(path string) (string, error) { return readSecretFile(path) }

// ReadJoinToken reads --join-token or --join-token-file.
func ReadJoinToken(c *cobra.Command) (string, error) { return readJoinToken(c) }

// ConfigLaunchers are the config file's [launchers].
func ConfigLaunchers(c *cobra.Command) (taskwire.Launchers, error) {
	file, err := loadConfigFile(c)
	if err != nil {
		return nil, err
	}
	return file.Launchers, nil
}
