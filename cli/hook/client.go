package hook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/api/hookwire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/util/secretenv"
	"github.com/harn-dev/harn/util/text"
)

// ErrNoNode means no node answered on the socket.
var ErrNoNode = errors.New("no harn node answers")

// place is where a client finds its node.
type Place struct {
	DataDir string
	Socket  string
}

// addPlaceFlags adds --data-dir and --socket (persistent, on the root).
func addPlaceFlags(c *cobra.Command) {
	c.PersistentFlags().String("data-dir", "", "state directory (default $XDG_STATE_HOME/harn)")
	c.PersistentFlags().String("socket", "", "unix socket of the local node (default: derived from the data dir)")
}

func PlaceOf(c *cobra.Command) Place {
	dd, _ := c.Flags().GetString("data-dir")
	return PlaceAt(c, dd)
}

// placeAt is the node's place for data dir dd ("" for the default) and
// the command's --socket.
func PlaceAt(c *cobra.Command, dd string) Place {
	if dd == "" {
		dd = layout.DefaultDataDir()
	}
	if abs, err := filepath.Abs(dd); err == nil {
		dd = abs
	}
	sock, _ := c.Flags().GetString("socket")
	if sock == "" {
		sock = layout.DefaultSocket(dd)
	}
	return Place{DataDir: dd, Socket: sock}
}

// maxReply bounds one reply from the node (a whole roster).
const MaxReply = 512 << 20

// dialConn makes the hook's connection to the node on p.Socket (the
// local wire, without the full client). It refuses a socket that is not
// this user's (a symlink, another owner) before connecting, and a peer
// that runs as another user before sending anything: another local user
// who made the socket path first must not receive hook events.
func dialConn(p Place) (*hookwire.Conn, error) {
	if err := layout.CheckSocket(p.Socket); err != nil {
		return nil, WithCode(ExitPermission, err)
	}
	return hookwire.Dial(p.Socket, MaxReply, func(ctx context.Context, _ string) (net.Conn, error) {
		return DialSocket(ctx, p.Socket)
	}), nil
}

// dialSocket connects to the socket after checking its owner, and checks
// the peer's user before returning the connection.
func DialSocket(ctx context.Context, sock string) (net.Conn, error) {
	if err := layout.CheckSocket(sock); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, layout.DialPermission(sock, err)
	}
	if err := layout.CheckPeer(sock, c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// probeSocket tells how the socket is: dead (absent, or a stale file
// nothing listens on), answering, or a permission problem (err, with
// ExitPermission): not this user's socket, or one that refuses this user.
// It sends nothing.
func ProbeSocket(sock string) (dead bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), ProbeWait)
	defer cancel()
	conn, err := DialSocket(ctx, sock)
	if err != nil {
		return DialState(err)
	}
	conn.Close()
	return false, nil
}

// probeWait bounds a probe of the socket.
const ProbeWait = 200 * time.Millisecond

// dialState reads a failed dial of the socket: dead (absent, or a stale
// file nothing listens on), or a permission problem (err, with
// ExitPermission); anything else is a node that is busy.
func DialState(err error) (dead bool, _ error) {
	if errors.Is(err, layout.ErrSocketPermission) {
		return false, WithCode(ExitPermission, err)
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOENT), nil
}

// socketDead reports whether nothing listens on the socket (absent, or a
// stale file), as opposed to a node that is busy. A socket with a
// permission problem is not dead: no node is started over it.
func SocketDead(sock string) bool {
	dead, _ := ProbeSocket(sock)
	return dead
}

// startNode starts the node (`harnd node`, harnd found beside harn or on
// PATH) in the background, detached, logging to <data-dir>/node.log. A node
// already holding the data dir makes the new one exit at once, so racing
// starters are harmless.
func StartNode(p Place) error {
	exe, err := FindDaemon()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.DataDir, 0o700); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(p.DataDir, "node.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "node", "--data-dir", p.DataDir, "--socket", p.Socket)
	cmd.Env = StartedNodeEnv(os.Environ())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// startedNodeEnv is the environment of a node a client starts (the TUI,
// a hook): the caller's, without its provider key. The TUI sends its key
// with each start it makes, to this node only; the node never takes it
// as its own key, to send for sessions other callers start.
func StartedNodeEnv(env []string) []string {
	return secretenv.Without(env, secretenv.ProviderKey, secretenv.ProviderKeyFile)
}

// noNode is the error of a command that found no node at p: it names the
// socket and the command that starts a node there.
func NoNode(p Place) error {
	return WithCode(ExitUnavailable, fmt.Errorf("%w on %s; start one with `%s`", ErrNoNode, p.Socket, StartHint(p)))
}

// startHint is the exact command that starts a node at p: `harn node`,
// with --data-dir and --socket when they are not the defaults.
func StartHint(p Place) string {
	args := []string{"harn", "node"}
	if def, err := filepath.Abs(layout.DefaultDataDir()); err != nil || def != p.DataDir {
		args = append(args, "--data-dir", ShellQuote(p.DataDir))
	}
	if p.Socket != layout.DefaultSocket(p.DataDir) {
		args = append(args, "--socket", ShellQuote(p.Socket))
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == '@' || r == '=' || r == ',' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// rpcErr maps a node's answer (an api.StatusError) to an error with the
// right exit code, by its sentinel.
func RpcErr(err error, p Place) error {
	if err == nil {
		return nil
	}
	var se *hookwire.StatusError
	if !errors.As(err, &se) {
		return WithCode(ExitError, err)
	}
	msg := text.OneLine(se.Message()) // it may quote agent or peer text
	switch {
	case errors.Is(err, hookwire.ErrLedgerUnwritable):
		return WithCode(ExitDiskFull, fmt.Errorf("the node refuses writes: %s; free space in its data dir (reads still work)", msg))
	case errors.Is(err, hookwire.ErrWriteRefused):
		return WithCode(ExitTrust, errors.New(msg))
	case errors.Is(err, hookwire.ErrNotFound):
		return WithCode(ExitNotFound, errors.New(msg))
	case errors.Is(err, hookwire.ErrInvalid):
		return WithCode(ExitUsage, errors.New(msg))
	case errors.Is(err, hookwire.ErrRefused):
		return WithCode(ExitRefused, errors.New(msg))
	case errors.Is(err, hookwire.ErrAmbiguous):
		return WithCode(ExitAmbiguous, errors.New(msg))
	case errors.Is(err, hookwire.ErrNoLeader):
		return WithCode(ExitNoLeader, errors.New(msg))
	case errors.Is(err, hookwire.ErrUnimplemented):
		return WithCode(ExitUsage, errors.New(msg))
	case errors.Is(err, hookwire.ErrNoLocalWire):
		return WithCode(ExitUnavailable, fmt.Errorf("%w (%s); it may be a harnd older than this harn, which does not speak its local wire: stop that node, then run `%s`",
			hookwire.ErrNoLocalWire, p.Socket, StartHint(p)))
	case errors.Is(err, hookwire.ErrUnavailable):
		// A socket that refuses this user is a permission problem, not
		// a missing node.
		if _, perr := ProbeSocket(p.Socket); perr != nil {
			return perr
		}
		return NoNode(p)
	}
	return WithCode(ExitError, errors.New(msg))
}
