package cli

import (
	"context"
	"net"
	"time"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/layout"
)

// client is a connection to the local node: the typed api.Client, whose
// errors match the api.Err... sentinels.
type client struct {
	*api.Client
	api *api.Client
}

// dial connects to the node on p.Socket. It refuses a socket that is not
// this user's (a symlink, another owner) before connecting, and a peer that
// runs as another user before sending anything: another local user who
// made the socket path first must not receive hook events.
func dial(p hook.Place) (*client, error) {
	if err := layout.CheckSocket(p.Socket); err != nil {
		return nil, hook.WithCode(hook.ExitPermission, err)
	}
	// A roster of many thousands of sessions is one large reply.
	c, err := api.Dial(p.Socket, hook.MaxReply, func(ctx context.Context, _ string) (net.Conn, error) {
		return hook.DialSocket(ctx, p.Socket)
	})
	if err != nil {
		return nil, err
	}
	return &client{Client: c, api: c}, nil
}

func (c *client) Close() { c.Client.Close() }

// connect dials the node. It never starts one: only hooks do, because a
// hook must not lose its agent's events (hook.go). Every other command
// that finds no node says how to start one, as the exact command, and
// exits ExitUnavailable, creating nothing.
// Its probe of the socket is the client's first connection, kept for the
// first call.
func connect(_ context.Context, p hook.Place, _ time.Duration) (*client, error) {
	cl, err := dial(p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), hook.ProbeWait)
	defer cancel()
	if err := cl.api.Open(ctx); err != nil {
		dead, perr := hook.DialState(err)
		if perr != nil || dead {
			cl.Close()
			if perr != nil {
				return nil, perr
			}
			return nil, hook.NoNode(p)
		}
	}
	return cl, nil
}
