package api

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Client is the typed client of a local node: its Local and MeshAdmin
// services on one connection. Every unary call's error comes back through
// Error, so a caller tells answers apart with errors.Is and the Err...
// sentinels (ErrNotFound, ErrWriteRefused, ...), never by the text.
type Client struct {
	LocalClient
	Admin MeshAdminClient
	conn  *grpc.ClientConn
}

// Dial makes a client of the node at the unix socket path, connecting
// through dial (which checks the socket and its peer before anything is
// sent). maxReply bounds one reply. Dial does no I/O: the first call
// connects.
func Dial(path string, maxReply int, dial func(ctx context.Context, addr string) (net.Conn, error)) (*Client, error) {
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxReply)),
		grpc.WithContextDialer(dial),
		grpc.WithChainUnaryInterceptor(typedErrors))
	if err != nil {
		return nil, err
	}
	return &Client{LocalClient: NewLocalClient(conn), Admin: NewMeshAdminClient(conn), conn: conn}, nil
}

// typedErrors maps a unary call's status to a *StatusError.
func typedErrors(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return Error(invoker(ctx, method, req, reply, cc, opts...))
}

// Conn is the client's connection, for the node's other services.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection; safe twice.
func (c *Client) Close() error { return c.conn.Close() }
