package apigrpc

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/api"
)

// Service is one gRPC service and its implementation, as registered.
type Service struct {
	Desc *grpc.ServiceDesc
	Impl any
}

// LocalWire serves the local wire (api.LocalPreface): the unary methods of
// its services, one call and one reply at a time on each connection. A
// call's context ends when the client goes away, its timeout passes or
// the wire closes.
type LocalWire struct {
	methods map[string]func(ctx context.Context, dec func(any) error) (any, error)
	// Wrap, when set, wraps each call (a trace span, say): it returns the
	// call's context and a function to call with its error.
	Wrap func(ctx context.Context, method string) (context.Context, func(error))

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

// NewLocalWire is the wire of services. It starts nothing.
func NewLocalWire(services ...Service) *LocalWire {
	w := &LocalWire{methods: map[string]func(context.Context, func(any) error) (any, error){}, conns: map[net.Conn]struct{}{}}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	for _, s := range services {
		for _, m := range s.Desc.Methods {
			h, impl := m.Handler, s.Impl
			w.methods["/"+s.Desc.ServiceName+"/"+m.MethodName] = func(ctx context.Context, dec func(any) error) (any, error) {
				return h(impl, ctx, dec, nil)
			}
		}
	}
	return w
}

// ServeConn answers conn, whose preface was read, until the client closes
// it or the wire closes; base is each call's parent context (it carries
// the peer). It closes conn.
func (w *LocalWire) ServeConn(base context.Context, conn net.Conn) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		conn.Close()
		return
	}
	w.conns[conn] = struct{}{}
	w.wg.Add(1)
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.conns, conn)
		w.mu.Unlock()
		conn.Close()
		w.wg.Done()
	}()
	for {
		call := new(api.LocalCall)
		conn.SetReadDeadline(time.Time{})
		if w.ctx.Err() != nil { // closed: Close set the deadline before or after
			return
		}
		if err := api.ReadFrame(conn, api.MaxLocalCall, call); err != nil {
			if errors.Is(err, api.ErrFrameTooLarge) {
				api.WriteFrame(conn, &api.LocalReply{Code: uint32(codes.ResourceExhausted), Message: "local wire: " + err.Error()})
			}
			return
		}
		reply := w.call(base, conn, call)
		if err := api.WriteFrame(conn, reply); err != nil {
			return
		}
	}
}

// call runs one call. While it runs, a read on conn tells whether the
// client went away (it sends nothing until the reply), which ends the
// call's context.
func (w *LocalWire) call(base context.Context, conn net.Conn, call *api.LocalCall) *api.LocalReply {
	h, ok := w.methods[call.Method]
	if !ok {
		return &api.LocalReply{Code: uint32(codes.Unimplemented), Message: "unknown method " + strings.ToValidUTF8(call.Method, "?")}
	}
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	stop := context.AfterFunc(w.ctx, cancel)
	defer stop()
	if call.TimeoutMs > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, time.Duration(min(call.TimeoutMs, int64(24*time.Hour/time.Millisecond)))*time.Millisecond)
		defer c2()
	}
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		var b [1]byte
		if _, err := conn.Read(b[:]); err != nil && !isTimeout(err) {
			cancel() // the client closed: nobody waits for this reply
		} else if err == nil {
			cancel() // a byte before the reply breaks the protocol
			conn.Close()
		}
	}()
	end := func(error) {}
	if w.Wrap != nil {
		ctx, end = w.Wrap(ctx, call.Method)
	}
	resp, err := h(ctx, func(v any) error { return proto.Unmarshal(call.Body, v.(proto.Message)) })
	end(err)
	conn.SetReadDeadline(time.Unix(1, 0)) // ends the watching read
	<-gone
	if err != nil {
		st := Status(err)
		r := &api.LocalReply{Code: uint32(st.Code()), Message: st.Message()}
		if st.Code() == codes.OK {
			r.Code = uint32(codes.Unknown)
		}
		if i := info(st); i != nil {
			r.Reason, r.Meta = i.Reason, i.Metadata
		}
		return r
	}
	body, err := proto.Marshal(resp.(proto.Message))
	if err != nil {
		return &api.LocalReply{Code: uint32(codes.Internal), Message: "marshal reply: " + err.Error()}
	}
	return &api.LocalReply{Body: body}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Close ends every call's context, closes every connection and waits for
// their ServeConn to return. Safe twice.
func (w *LocalWire) Close() {
	w.mu.Lock()
	w.closed = true
	conns := make([]net.Conn, 0, len(w.conns))
	for c := range w.conns {
		conns = append(conns, c)
	}
	w.mu.Unlock()
	w.cancel()
	for _, c := range conns {
		c.SetReadDeadline(time.Unix(1, 0))
	}
	w.wg.Wait()
}

// Serve answers the local wire on lis (every connection must open with
// api.LocalPreface; others are closed) until lis closes. The node serves
// its socket through its own mux, which also routes gRPC; Serve is the
// wire alone, for a node of a test.
func (w *LocalWire) Serve(lis net.Listener) error {
	for {
		c, err := lis.Accept()
		if err != nil {
			return err
		}
		go func() {
			b := make([]byte, len(api.LocalPreface))
			c.SetReadDeadline(time.Now().Add(10 * time.Second)) //clock:real a socket's deadline is wall time
			if _, err := io.ReadFull(c, b); err != nil || string(b) != api.LocalPreface {
				c.Close()
				return
			}
			w.ServeConn(context.Background(), c)
		}()
	}
}
