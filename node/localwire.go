package node

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	grpcpeer "google.golang.org/grpc/peer"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/operator"
)

// The local socket speaks two protocols. harn (the client, which links no
// gRPC) opens a connection with api.LocalPreface and then calls the Local
// and MeshAdmin handlers over the local wire; anything else (a gRPC
// client's HTTP/2 preface) goes to the gRPC server. Both learn the peer's
// uid and pid once, at accept, and a handler reads them the same way
// (node/operator).

// prefaceWait bounds how long an accepted connection may take to send its
// first bytes.
const prefaceWait = 10 * time.Second

// localConn is an accepted connection with its peer and the bytes read to
// tell its protocol, which Read gives back first.
type localConn struct {
	net.Conn
	peer   operator.Peer
	prefix []byte
}

// Peer is the connection's peer, read at accept.
func (c *localConn) Peer() operator.Peer { return c.peer }

func (c *localConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// localMux accepts on the local socket and hands each connection to its
// protocol. It owns its accept loop and the goroutines that read
// prefaces; Close waits for them.
type localMux struct {
	lis  net.Listener
	grpc *chanListener
	wire *apigrpc.LocalWire
	base context.Context
	// attach serves a connection that opens with api.AttachPreface
	// (hosted_attach.go); it closes the connection.
	attach func(ctx context.Context, c net.Conn)
	wg     sync.WaitGroup
}

func newLocalMux(lis net.Listener, wire *apigrpc.LocalWire, base context.Context) *localMux {
	return &localMux{lis: lis, grpc: newChanListener(lis.Addr()), wire: wire, base: base}
}

// run accepts until the listener closes.
func (m *localMux) run() {
	for {
		c, err := m.lis.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.route(c)
		}()
	}
}

// route reads a connection's first bytes and serves it by its protocol.
func (m *localMux) route(c net.Conn) {
	lc := &localConn{Conn: c, peer: operator.PeerOf(c)}
	buf := make([]byte, len(api.LocalPreface))
	c.SetReadDeadline(time.Now().Add(prefaceWait)) //clock:real a socket's deadline is wall time
	n, err := io.ReadFull(c, buf)
	c.SetReadDeadline(time.Time{})
	if err == nil && string(buf) == api.LocalPreface {
		ctx := grpcpeer.NewContext(m.base, &grpcpeer.Peer{Addr: c.RemoteAddr(), LocalAddr: c.LocalAddr(), AuthInfo: lc.peer})
		m.wire.ServeConn(ctx, lc)
		return
	}
	if err == nil && string(buf) == api.AttachPreface && m.attach != nil {
		ctx := grpcpeer.NewContext(m.base, &grpcpeer.Peer{Addr: c.RemoteAddr(), LocalAddr: c.LocalAddr(), AuthInfo: lc.peer})
		m.attach(ctx, lc)
		return
	}
	if n == 0 {
		c.Close()
		return
	}
	lc.prefix = buf[:n]
	if !m.grpc.push(lc) {
		c.Close()
	}
}

// Close stops accepting and waits for the connections being routed; the
// local wire and the gRPC server close their own.
func (m *localMux) Close() {
	m.lis.Close()
	m.grpc.Close()
	m.wire.Close()
	m.wg.Wait()
}

// chanListener is the gRPC server's listener: the connections the mux
// routes to it.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	once sync.Once
	done chan struct{}
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// push hands c to the gRPC server; false once the listener is closed.
func (l *chanListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

var _ net.Listener = (*chanListener)(nil)

// traceLocal wraps a local wire call in a server span named as gRPC's
// (harn.v1.Local/Append), so that a trace reads the same either way.
func traceLocal(tr trace.Tracer) func(ctx context.Context, method string) (context.Context, func(error)) {
	return func(ctx context.Context, method string) (context.Context, func(error)) {
		name := strings.TrimPrefix(method, "/")
		svc, m, _ := strings.Cut(name, "/")
		ctx, span := tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("rpc.system", "harn-local"), attribute.String("rpc.service", svc), attribute.String("rpc.method", m)))
		return ctx, func(err error) {
			if err != nil {
				st := apigrpc.Status(err)
				span.SetStatus(otelcodes.Error, st.Message())
				span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(st.Code())))
			}
			span.End()
		}
	}
}
