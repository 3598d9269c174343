package api

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Client is the typed client of a local node: its Local and MeshAdmin
// services over the local wire (LocalPreface), which speaks the same
// messages as gRPC without linking it. Every call's error is a
// *StatusError, so a caller tells answers apart with errors.Is and the
// Err... sentinels (ErrNotFound, ErrWriteRefused, ...), never by the text.
// It is safe for concurrent use: each call in flight has its own
// connection, and finished ones are kept for the next call.
type Client struct {
	Admin *AdminClient

	path     string
	maxReply int
	dial     func(ctx context.Context, addr string) (net.Conn, error)

	mu     sync.Mutex
	idle   []net.Conn
	closed bool
}

// AdminClient is the client's MeshAdmin service.
type AdminClient struct{ c *Client }

// Invoke is the client's Invoke.
func (a *AdminClient) Invoke(ctx context.Context, method string, in, out proto.Message) error {
	return a.c.Invoke(ctx, method, in, out)
}

// maxIdle bounds the connections a client keeps between calls.
const maxIdle = 4

// ErrClientClosed: a call on a closed client.
var ErrClientClosed = errors.New("api: client closed")

// Dial makes a client of the node at the unix socket path, connecting
// through dial (which checks the socket and its peer before anything is
// sent). maxReply bounds one reply. Dial does no I/O: the first call (or
// Connect) connects.
func Dial(path string, maxReply int, dial func(ctx context.Context, addr string) (net.Conn, error)) (*Client, error) {
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", addr)
		}
	}
	c := &Client{path: path, maxReply: maxReply, dial: dial}
	c.Admin = &AdminClient{c: c}
	return c, nil
}

// Connect opens a connection now, so that the first call does not wait
// for one; a failure is left for that call to meet.
func (c *Client) Connect() {
	conn, err := c.open(context.Background())
	if err == nil {
		c.put(conn)
	}
}

// Close closes the idle connections and refuses later calls; calls in
// flight finish on their own connections. Safe twice.
func (c *Client) Close() error {
	c.mu.Lock()
	idle := c.idle
	c.idle, c.closed = nil, true
	c.mu.Unlock()
	for _, conn := range idle {
		conn.Close()
	}
	return nil
}

// Invoke calls method (a gRPC full method name) with in and reads the
// reply into out.
func (c *Client) Invoke(ctx context.Context, method string, in, out proto.Message) error {
	body, err := proto.Marshal(in)
	if err != nil {
		return NewStatusError(codes.Internal, "marshal "+method+": "+err.Error(), "", nil)
	}
	call := &LocalCall{Method: method, Body: body}
	if dl, ok := ctx.Deadline(); ok {
		call.TimeoutMs = max(time.Until(dl).Milliseconds(), 1)
	}
	for attempt := 0; ; attempt++ {
		conn, pooled, err := c.get(ctx)
		if err != nil {
			return callError(ctx, err)
		}
		reply, sent, err := c.roundTrip(ctx, conn, call)
		if err != nil {
			conn.Close()
			// A kept connection the node closed meanwhile (it restarted)
			// fails before the node read a byte of the call: that one
			// call goes again on a fresh connection.
			if pooled && !sent && attempt == 0 && ctx.Err() == nil {
				continue
			}
			return callError(ctx, err)
		}
		c.put(conn)
		if reply.Code != uint32(codes.OK) {
			return NewStatusError(codes.Code(reply.Code), reply.Message, reply.Reason, reply.Meta)
		}
		if err := proto.Unmarshal(reply.Body, out); err != nil {
			return NewStatusError(codes.Internal, "unmarshal the reply of "+method+": "+err.Error(), "", nil)
		}
		return nil
	}
}

// roundTrip sends one call and reads its reply. sent is false when the
// call surely did not reach the node: the write failed, or the node
// closed the connection without a byte of reply.
func (c *Client) roundTrip(ctx context.Context, conn net.Conn, call *LocalCall) (_ *LocalReply, sent bool, _ error) {
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Time{})
	}
	if err := WriteFrame(conn, call); err != nil {
		return nil, false, err
	}
	reply := new(LocalReply)
	if err := ReadFrame(conn, c.maxReply+1024, reply); err != nil {
		return nil, !errors.Is(err, io.EOF), err
	}
	return reply, true, nil
}

// get takes a kept connection, or opens one.
func (c *Client) get(ctx context.Context) (conn net.Conn, pooled bool, err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, false, ErrClientClosed
	}
	if n := len(c.idle); n > 0 {
		conn = c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return conn, true, nil
	}
	c.mu.Unlock()
	conn, err = c.open(ctx)
	return conn, false, err
}

func (c *Client) open(ctx context.Context) (net.Conn, error) {
	conn, err := c.dial(ctx, c.path)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(conn, LocalPreface); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// put keeps conn for the next call, or closes it.
func (c *Client) put(conn net.Conn) {
	c.mu.Lock()
	if !c.closed && len(c.idle) < maxIdle {
		c.idle = append(c.idle, conn)
		conn = nil
	}
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// callError is a failed call's error: the context's end as gRPC codes it
// (DeadlineExceeded, Canceled), anything else Unavailable. It wraps the
// cause, so errors.Is still finds a dialer's sentinel.
func callError(ctx context.Context, err error) error {
	if errors.Is(err, ErrClientClosed) {
		return NewStatusError(codes.Canceled, err.Error(), "", nil).wrap(err)
	}
	if cerr := ctx.Err(); cerr != nil {
		c := codes.Canceled
		if errors.Is(cerr, context.DeadlineExceeded) {
			c = codes.DeadlineExceeded
		}
		return NewStatusError(c, cerr.Error(), "", nil).wrap(cerr)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return NewStatusError(codes.DeadlineExceeded, "context deadline exceeded", "", nil).wrap(err)
	}
	return NewStatusError(codes.Unavailable, "connection error: "+err.Error(), "", nil).wrap(err)
}
