package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/text"
)

// ErrNoNode means no node answered on the socket.
var ErrNoNode = errors.New("no harn node answers")

// place is where a client finds its node.
type place struct {
	DataDir string
	Socket  string
}

// addPlaceFlags adds --data-dir and --socket (persistent, on the root).
func addPlaceFlags(c *cobra.Command) {
	c.PersistentFlags().String("data-dir", "", "state directory (default $XDG_STATE_HOME/harn)")
	c.PersistentFlags().String("socket", "", "unix socket of the local node (default: derived from the data dir)")
}

func placeOf(c *cobra.Command) place {
	dd, _ := c.Flags().GetString("data-dir")
	if dd == "" {
		dd = node.DefaultDataDir()
	}
	if abs, err := filepath.Abs(dd); err == nil {
		dd = abs
	}
	sock, _ := c.Flags().GetString("socket")
	if sock == "" {
		sock = node.DefaultSocket(dd)
	}
	return place{DataDir: dd, Socket: sock}
}

// maxReply bounds one reply from the node (a whole roster).
const maxReply = 512 << 20

// client is a connection to the local node.
type client struct {
	conn *grpc.ClientConn
	api  api.LocalClient
}

func dial(p place) (*client, error) {
	conn, err := grpc.NewClient("unix://"+p.Socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// A roster of many thousands of sessions is one large reply.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxReply)),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", p.Socket)
		}))
	if err != nil {
		return nil, err
	}
	return &client{conn: conn, api: api.NewLocalClient(conn)}, nil
}

func (c *client) Close() { c.conn.Close() }

// socketDead reports whether nothing listens on the socket (absent, or a
// stale file), as opposed to a node that is busy.
func socketDead(sock string) bool {
	conn, err := net.DialTimeout("unix", sock, 200*time.Millisecond)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOENT)
	}
	conn.Close()
	return false
}

// startNode starts `harn node` in the background, detached, logging to
// <data-dir>/node.log. A node already holding the data dir makes the new
// one exit at once, so racing starters are harmless.
func startNode(p place) error {
	exe, err := os.Executable()
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
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// connect dials the node, starting one in the background when none is
// running and waiting up to wait for it to answer.
func connect(ctx context.Context, p place, wait time.Duration) (*client, error) {
	if socketDead(p.Socket) {
		if err := startNode(p); err != nil {
			return nil, withCode(ExitUnavailable, fmt.Errorf("%w on %s and starting one failed: %v", ErrNoNode, p.Socket, err))
		}
		deadline := time.Now().Add(wait)
		for socketDead(p.Socket) {
			if time.Now().After(deadline) {
				return nil, withCode(ExitUnavailable, fmt.Errorf("%w on %s; started one, but it is not answering yet (see %s)",
					ErrNoNode, p.Socket, filepath.Join(p.DataDir, "node.log")))
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return dial(p)
}

// rpcErr maps a node's gRPC status to an error with the right exit code.
func rpcErr(err error, p place) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return withCode(ExitError, err)
	}
	msg := text.OneLine(st.Message()) // it may quote agent or peer text
	switch st.Code() {
	case codes.NotFound:
		return withCode(ExitNotFound, errors.New(msg))
	case codes.InvalidArgument:
		return withCode(ExitUsage, errors.New(msg))
	case codes.FailedPrecondition:
		return withCode(ExitRefused, errors.New(msg))
	case codes.Aborted:
		return withCode(ExitAmbiguous, errors.New(msg))
	case codes.ResourceExhausted:
		return withCode(ExitNoLeader, errors.New(msg))
	case codes.Unimplemented:
		return withCode(ExitUsage, errors.New(msg))
	case codes.Unavailable, codes.DeadlineExceeded:
		return withCode(ExitUnavailable, fmt.Errorf("%w on %s; start one with `harn node`", ErrNoNode, p.Socket))
	}
	return withCode(ExitError, errors.New(msg))
}
