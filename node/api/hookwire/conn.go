// Package hookwire is the room of the hook's round trip on the local wire:
// the messages the hook sends and reads (from node/api's local.proto,
// hook.proto and harn.proto) as plain Go structs with a protobuf codec of
// their own, and the hook's client methods, all written by
// protoc-gen-harnlocal (messages.harn.go, wire.harn.go); the local wire's
// connection (Conn) and the node's status errors. The bytes are the
// protobuf encoding of the same messages, so the node reads them with its
// generated code; TestHookwireIsTheProtoEncoding checks each message both
// ways. It imports the standard library and presence only: harn-hook, the
// process that every tool call of every agent starts, links no protobuf
// runtime and builds no descriptors. node/api re-exports its errors and
// speaks through its Conn.
package hookwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// Conn is a client's connection to its node on the local wire
// (LocalPreface): one call and its reply at a time on each of its unix
// socket connections. It is safe for concurrent use: each call in flight
// has its own connection, and finished ones are kept for the next call.
// Every call's error is a *StatusError.
type Conn struct {
	path     string
	maxReply int
	dial     func(ctx context.Context, addr string) (net.Conn, error)

	mu     sync.Mutex
	idle   []idleConn
	closed bool
}

// maxIdle bounds the connections a client keeps between calls.
const maxIdle = 4

// ErrNoLocalWire: the node closed a fresh connection without a byte of
// answer to its first call, as a harnd from before the local wire does
// (it speaks gRPC only on the socket).
var ErrNoLocalWire = errors.New("the node closed the connection without answering")

// ErrClientClosed: a call on a closed client.
var ErrClientClosed = errors.New("api: client closed")

// LocalPreface opens a local wire connection: the node reads it first and
// serves the connection without gRPC (a gRPC client's preface begins
// "PRI * HTTP/2.0", so the two never meet).
const LocalPreface = "harn/l1\n"

// MaxLocalCall bounds one call's frame on the local wire, as the node's
// gRPC server bounds a request.
const MaxLocalCall = 8 << 20

// ErrFrameTooLarge: a frame's length is over the reader's bound.
var ErrFrameTooLarge = errors.New("api: local wire frame too large")

// Dial makes a connection to the node at the unix socket path,
// connecting through dial (which checks the socket and its peer before
// anything is sent; nil dials plainly). maxReply bounds one reply. Dial
// does no I/O: the first call (or Connect) connects.
func Dial(path string, maxReply int, dial func(ctx context.Context, addr string) (net.Conn, error)) *Conn {
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", addr)
		}
	}
	return &Conn{path: path, maxReply: maxReply, dial: dial}
}

// Open opens a connection now and keeps it for the first call; it returns
// the dialer's error (a command that must tell a dead socket from a busy
// one reads it).
func (c *Conn) Open(ctx context.Context) error {
	conn, err := c.open(ctx)
	if err != nil {
		return err
	}
	c.put(conn, false)
	return nil
}

// Connect opens a connection now, so that the first call does not wait
// for one; a failure is left for that call to meet.
func (c *Conn) Connect() { _ = c.Open(context.Background()) }

// Close closes the idle connections and refuses later calls; calls in
// flight finish on their own connections. Safe twice.
func (c *Conn) Close() error {
	c.mu.Lock()
	idle := c.idle
	c.idle, c.closed = nil, true
	c.mu.Unlock()
	for _, conn := range idle {
		conn.Close()
	}
	return nil
}

// Call calls method (a gRPC full method name) with the encoded request
// body and returns the encoded reply.
func (c *Conn) Call(ctx context.Context, method string, body []byte) ([]byte, error) {
	call := &LocalCall{Method: method, Body: body}
	if dl, ok := ctx.Deadline(); ok {
		call.TimeoutMs = max(time.Until(dl).Milliseconds(), 1) //clock:real a context's deadline is wall time
	}
	frame := Frame(call.Marshal())
	for attempt := 0; ; attempt++ {
		conn, answered, err := c.get(ctx)
		if err != nil {
			return nil, callError(ctx, err)
		}
		reply, sent, err := c.roundTrip(ctx, conn, frame)
		if err != nil {
			conn.Close()
			// A kept connection the node closed meanwhile (it restarted)
			// fails before the node read a byte of the call: that one
			// call goes again on a fresh connection.
			if answered && !sent && attempt == 0 && ctx.Err() == nil {
				continue
			}
			// A harnd from before the local wire answers a fresh
			// connection's preface with its HTTP/2 settings and closes it.
			if !answered && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) && ctx.Err() == nil {
				err = fmt.Errorf("%w (%w)", ErrNoLocalWire, err)
			}
			return nil, callError(ctx, err)
		}
		c.put(conn, true)
		if Code(reply.Code) != OK {
			return nil, NewStatusError(Code(reply.Code), reply.Message, reply.Reason, reply.Meta)
		}
		return reply.Body, nil
	}
}

// call is Call with messages.
func (c *Conn) call(ctx context.Context, method string, in interface{ Marshal() []byte }, out interface{ Unmarshal([]byte) error }) error {
	b, err := c.Call(ctx, method, in.Marshal())
	if err != nil {
		return err
	}
	if err := out.Unmarshal(b); err != nil {
		return NewStatusError(Internal, "unmarshal the reply of "+method+": "+err.Error(), "", nil)
	}
	return nil
}

// roundTrip sends one call and reads its reply. sent is false when the
// call surely did not reach the node: the write failed, or the node
// closed the connection without a byte of reply.
func (c *Conn) roundTrip(ctx context.Context, conn net.Conn, frame []byte) (_ *LocalReply, sent bool, _ error) {
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Time{})
	}
	if _, err := conn.Write(frame); err != nil {
		return nil, false, err
	}
	b, err := ReadFrame(conn, c.maxReply+1024)
	if err != nil {
		return nil, !errors.Is(err, io.EOF), err
	}
	reply := new(LocalReply)
	if err := reply.Unmarshal(b); err != nil {
		return nil, true, err
	}
	return reply, true, nil
}

// idleConn is a kept connection; answered says it has carried a call.
type idleConn struct {
	net.Conn
	answered bool
}

// get takes a kept connection, or opens one; answered says the connection
// has carried a call before.
func (c *Conn) get(ctx context.Context) (conn net.Conn, answered bool, err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, false, ErrClientClosed
	}
	if n := len(c.idle); n > 0 {
		ic := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return ic.Conn, ic.answered, nil
	}
	c.mu.Unlock()
	conn, err = c.open(ctx)
	return conn, false, err
}

func (c *Conn) open(ctx context.Context) (net.Conn, error) {
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
func (c *Conn) put(conn net.Conn, answered bool) {
	c.mu.Lock()
	if !c.closed && len(c.idle) < maxIdle {
		c.idle = append(c.idle, idleConn{conn, answered})
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
		return NewStatusError(Canceled, err.Error(), "", nil).wrap(err)
	}
	if cerr := ctx.Err(); cerr != nil {
		c := Canceled
		if errors.Is(cerr, context.DeadlineExceeded) {
			c = DeadlineExceeded
		}
		return NewStatusError(c, cerr.Error(), "", nil).wrap(cerr)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return NewStatusError(DeadlineExceeded, "context deadline exceeded", "", nil).wrap(err)
	}
	return NewStatusError(Unavailable, "connection error: "+err.Error(), "", nil).wrap(err)
}

// Frame is b as one frame of the local wire: a 4-byte big-endian length and
// the bytes.
func Frame(b []byte) []byte {
	f := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(f, uint32(len(b)))
	return append(f, b...)
}

// ReadFrame reads one frame of at most max bytes. It reads exactly the
// frame, never past it.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrFrameTooLarge, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}
