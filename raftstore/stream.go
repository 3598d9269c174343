package raftstore

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// StreamLayer is raft's network stream over TCP, wrapped in TLS when a
// tls.Config is given. It implements raft.StreamLayer: a listener that
// accepts peers' connections, and Dial with a timeout.
//
// It tracks every connection it accepts or dials and closes them all on
// Close: raft's NetworkTransport.Close stops only the listener, and its
// per-connection goroutines would otherwise wait on open connections.
type StreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	tls       *tls.Config

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// NewStreamLayer listens on bind. advertise is the address peers dial; ""
// means the bound address (which must not be unspecified). With tlsCfg
// nil the stream is plain TCP.
func NewStreamLayer(bind, advertise string, tlsCfg *tls.Config) (*StreamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft listen on %s: %w", bind, err)
	}
	if advertise == "" {
		advertise = ln.Addr().String()
	}
	if err := checkAdvertise(advertise); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%w: AdvertiseAddr: %w", ErrConfig, err)
	}
	addr, err := net.ResolveTCPAddr("tcp", advertise)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("%w: AdvertiseAddr %s: %w", ErrConfig, advertise, err)
	}
	if tlsCfg != nil {
		tlsCfg = tlsCfg.Clone()
		ln = tls.NewListener(ln, tlsCfg)
	}
	return &StreamLayer{ln: ln, advertise: addr, tls: tlsCfg, conns: map[*trackedConn]struct{}{}}, nil
}

// Accept waits for the next peer connection.
func (s *StreamLayer) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	return s.track(c)
}

// Close stops the listener and closes every open connection.
func (s *StreamLayer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	err := s.ln.Close()
	for c := range conns {
		c.Conn.Close()
	}
	return err
}

func (s *StreamLayer) track(c net.Conn) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: c, s: s}
	s.conns[tc] = struct{}{}
	return tc, nil
}

// trackedConn forgets itself in its StreamLayer when closed.
type trackedConn struct {
	net.Conn
	s    *StreamLayer
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}

// Addr is the advertised address (raft records it as this server's).
func (s *StreamLayer) Addr() net.Addr { return s.advertise }

// Dial connects to a peer within timeout, completing the TLS handshake
// when TLS is on.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	var c net.Conn
	var err error
	if s.tls == nil {
		c, err = d.Dial("tcp", string(address))
	} else {
		c, err = tls.DialWithDialer(d, "tcp", string(address), s.tls)
	}
	if err != nil {
		return nil, err
	}
	return s.track(c)
}
