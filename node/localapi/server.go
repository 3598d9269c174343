// Package localapi is the room of the node's local API: the local wire
// (node/api/local.proto), the one protocol between a client (harn,
// harn-hook) and its node on the unix socket. Server accepts on the
// socket, learns each connection's peer (uid, pid) once (operator.PeerOf,
// given to each call's context: operator.WithPeer), reads its
// preface and serves it: the local wire's calls, one call and one reply
// at a time, through the handler tables protoc-gen-harnlocal writes from
// the .proto (api.LocalMethods, api.MeshAdminMethods, api.HostedMethods),
// or an attach (api.AttachPreface), which it hands to its Attach. gRPC is
// not spoken here: it carries node-to-node calls only.
package localapi

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/operator"
)

// PrefaceWait bounds how long an accepted connection may take to send its
// first bytes.
const PrefaceWait = 10 * time.Second

// Server serves the local socket. New starts nothing; Run accepts until
// the listener closes; Close ends every call and waits for them.
type Server struct {
	lis     net.Listener
	methods map[string]api.Method
	// Wrap, when set, wraps each call (a trace span, say): it returns the
	// call's context and a function to call with its error. Set it before
	// Run.
	Wrap func(ctx context.Context, method string) (context.Context, func(error))
	// Attach, when set, serves a connection that opens with
	// api.AttachPreface; it closes the connection. Set it before Run.
	Attach func(ctx context.Context, c net.Conn)
	// Base is each call's parent context (nil: Background). Set it before
	// Run.
	Base context.Context

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

// New is the server of the methods of tables (each a generated
// <Service>Methods) on lis. It does no I/O.
func New(lis net.Listener, tables ...map[string]api.Method) *Server {
	s := &Server{lis: lis, methods: map[string]api.Method{}, conns: map[net.Conn]struct{}{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, t := range tables {
		for k, v := range t {
			s.methods[k] = v
		}
	}
	return s
}

// Run accepts until the listener closes, each connection in a goroutine
// that Close waits for.
func (s *Server) Run() {
	for {
		c, err := s.lis.Accept()
		if err != nil {
			if isTimeout(err) {
				continue
			}
			return
		}
		if !s.track(c) {
			c.Close()
			return
		}
		go func() {
			defer s.untrack(c)
			s.route(c)
		}()
	}
}

// track counts c as a connection being served; false once closed.
func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
	s.wg.Done()
}

// route reads a connection's preface and serves it by its protocol.
func (s *Server) route(c net.Conn) {
	p := operator.PeerOf(c)
	buf := make([]byte, len(api.LocalPreface))
	c.SetReadDeadline(time.Now().Add(PrefaceWait)) //clock:real a socket's deadline is wall time
	_, err := io.ReadFull(c, buf)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		return
	}
	base := s.Base
	if base == nil {
		base = context.Background()
	}
	ctx := operator.WithPeer(base, p)
	switch string(buf) {
	case api.LocalPreface:
		s.serveConn(ctx, c)
	case api.AttachPreface:
		if s.Attach != nil {
			s.Attach(ctx, c)
		}
	}
}

// serveConn answers the local wire on c until the client closes it or
// the server closes.
func (s *Server) serveConn(base context.Context, conn net.Conn) {
	for {
		call := new(api.LocalCall)
		conn.SetReadDeadline(time.Time{})
		if s.ctx.Err() != nil { // closed: Close set the deadline before or after
			return
		}
		if err := api.ReadFrame(conn, api.MaxLocalCall, call); err != nil {
			if errors.Is(err, api.ErrFrameTooLarge) {
				api.WriteFrame(conn, &api.LocalReply{Code: uint32(codes.ResourceExhausted), Message: "local wire: " + err.Error()})
			}
			return
		}
		reply := s.call(base, conn, call)
		if err := api.WriteFrame(conn, reply); err != nil {
			return
		}
	}
}

// call runs one call. While it runs, a read on conn tells whether the
// client went away (it sends nothing until the reply), which ends the
// call's context.
func (s *Server) call(base context.Context, conn net.Conn, call *api.LocalCall) *api.LocalReply {
	h, ok := s.methods[call.Method]
	if !ok {
		return &api.LocalReply{Code: uint32(codes.Unimplemented), Message: "unknown method " + strings.ToValidUTF8(call.Method, "?")}
	}
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
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
	if s.Wrap != nil {
		ctx, end = s.Wrap(ctx, call.Method)
	}
	resp, err := h(ctx, func(v proto.Message) error { return proto.Unmarshal(call.Body, v) })
	end(err)
	conn.SetReadDeadline(time.Unix(1, 0)) // ends the watching read
	<-gone
	if err != nil {
		return errorReply(err)
	}
	body, err := proto.Marshal(resp)
	if err != nil {
		return &api.LocalReply{Code: uint32(codes.Internal), Message: "marshal reply: " + err.Error()}
	}
	return &api.LocalReply{Body: body}
}

// errorReply is a handler's error as a reply: its status code, message
// and ErrorInfo (apigrpc.Status reads every kind the node returns).
func errorReply(err error) *api.LocalReply {
	st := apigrpc.Status(err)
	r := &api.LocalReply{Code: uint32(st.Code()), Message: st.Message()}
	if st.Code() == codes.OK {
		r.Code = uint32(codes.Unknown)
	}
	r.Reason, r.Meta = apigrpc.Reason(err), apigrpc.Metadata(err)
	return r
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Close stops accepting, ends every call's context, closes every
// connection and waits for their goroutines. Safe twice.
func (s *Server) Close() {
	s.lis.Close()
	s.mu.Lock()
	s.closed = true
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.cancel()
	for _, c := range conns {
		c.SetReadDeadline(time.Unix(1, 0))
	}
	s.wg.Wait()
}
