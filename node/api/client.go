package api

import (
	"context"
	"net"

	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/api/hookwire"
)

// Client is the typed client of a local node: its Local and MeshAdmin
// services over the local wire (hookwire.LocalPreface), which speaks the
// same messages as gRPC without linking it. Every call's error is a
// *StatusError, so a caller tells answers apart with errors.Is and the
// Err... sentinels (ErrNotFound, ErrWriteRefused, ...), never by the text.
// It is safe for concurrent use.
type Client struct {
	Admin *AdminClient
	conn  *hookwire.Conn
}

// AdminClient is the client's MeshAdmin service.
type AdminClient struct{ c *Client }

// Invoke is the client's Invoke.
func (a *AdminClient) Invoke(ctx context.Context, method string, in, out proto.Message) error {
	return a.c.Invoke(ctx, method, in, out)
}

// LocalPreface and MaxLocalCall are the local wire's (hookwire's).
const (
	LocalPreface = hookwire.LocalPreface
	MaxLocalCall = hookwire.MaxLocalCall
)

// ErrFrameTooLarge: a frame's length is over the reader's bound.
var ErrFrameTooLarge = hookwire.ErrFrameTooLarge

// Dial makes a client of the node at the unix socket path, connecting
// through dial (which checks the socket and its peer before anything is
// sent). maxReply bounds one reply. Dial does no I/O: the first call (or
// Connect) connects.
func Dial(path string, maxReply int, dial func(ctx context.Context, addr string) (net.Conn, error)) (*Client, error) {
	c := &Client{conn: hookwire.Dial(path, maxReply, dial)}
	c.Admin = &AdminClient{c: c}
	return c, nil
}

// Open opens a connection now and keeps it for the first call; it returns
// the dialer's error.
func (c *Client) Open(ctx context.Context) error { return c.conn.Open(ctx) }

// Connect opens a connection now, so that the first call does not wait
// for one.
func (c *Client) Connect() { c.conn.Connect() }

// Close closes the idle connections and refuses later calls. Safe twice.
func (c *Client) Close() error { return c.conn.Close() }

// Invoke calls method (a gRPC full method name) with in and reads the
// reply into out.
func (c *Client) Invoke(ctx context.Context, method string, in, out proto.Message) error {
	body, err := proto.Marshal(in)
	if err != nil {
		return NewStatusError(hookwire.Internal, "marshal "+method+": "+err.Error(), "", nil)
	}
	b, err := c.conn.Call(ctx, method, body)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(b, out); err != nil {
		return NewStatusError(hookwire.Internal, "unmarshal the reply of "+method+": "+err.Error(), "", nil)
	}
	return nil
}
