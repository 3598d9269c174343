package board

import (
	"context"
	"net"
	"strconv"
	"sync"
)

// Connections are admitted at accept time, fairly, so that nobody without
// the token can keep the board from its owner (a slow-header flood: many
// connections that send their headers a byte at a time and reconnect).
//
// A connection is pending until one of its requests proves the board's
// token (or the scrape token); then it is the owner's. Pending connections
// are counted per peer: on a loopback board the peer is the local user
// (the uid that owns the client's socket, asked of the kernel with one
// sock_diag request on Linux, else read from /proc/net/tcp), elsewhere the client's IP address. A peer holds at most
// MaxPeerConns pending connections; one more is closed at accept. All
// pending connections together hold at most MaxConns minus a quarter that
// stays for the owner's; when they fill it (or the whole MaxConns), a new
// connection closes the oldest pending connection of the peer that holds
// the most, if that peer holds more than the newcomer's, and is refused
// otherwise. So a flooder loses its own connections first, a peer with
// none pending always gets in, and once in, the owner's connection does
// not count against any of it. ReadHeaderTimeout (3 s) bounds how long a
// pending connection can hold its slot without a whole request.

// connKey carries a request's *trackedConn in its context.
type connKey struct{}

// connState of a tracked connection.
const (
	connPending = iota
	connOwner
	connClosed
)

// tracker admits and counts the board's connections.
type tracker struct {
	maxConns, maxPending, maxPeer int
	peerOf                        func(net.Conn) string

	mu     sync.Mutex
	total  int
	queued int                       // pending connections
	peers  map[string][]*trackedConn // pending, oldest first
	seen   Admission
}

// Admission counts the tracker's decisions (for tests and the board's
// metrics).
type Admission struct {
	Accepted, RefusedPeer, RefusedFull, Evicted int
}

func newTracker(l Limits, peerOf func(net.Conn) string) *tracker {
	pending := l.MaxConns - l.MaxConns/4
	return &tracker{maxConns: l.MaxConns, maxPending: max(1, pending), maxPeer: min(l.MaxPeerConns, max(1, pending)),
		peerOf: peerOf, peers: map[string][]*trackedConn{}}
}

// trackedConn is an admitted connection.
type trackedConn struct {
	net.Conn
	t     *tracker
	peer  string
	state int
}

// Close releases the connection's slot and closes it.
func (c *trackedConn) Close() error {
	c.t.release(c)
	return c.Conn.Close()
}

// owner marks the connection as the owner's: its slot no longer counts as
// pending.
func (c *trackedConn) owner() {
	t := c.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.state == connPending {
		t.unqueueLocked(c)
		c.state = connOwner
	}
}

func (t *tracker) unqueueLocked(c *trackedConn) {
	q := t.peers[c.peer]
	for i, x := range q {
		if x == c {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(t.peers, c.peer)
	} else {
		t.peers[c.peer] = q
	}
	t.queued--
}

func (t *tracker) release(c *trackedConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch c.state {
	case connClosed:
		return
	case connPending:
		t.unqueueLocked(c)
	}
	c.state = connClosed
	t.total--
}

// admit decides on a new connection: it returns the tracked connection,
// or nil when c must be closed; victim, when not nil, is a pending
// connection to close to make room.
func (t *tracker) admit(c net.Conn) (tc *trackedConn, victim *trackedConn) {
	peer := t.peerOf(c)
	t.mu.Lock()
	defer t.mu.Unlock()
	mine := len(t.peers[peer])
	if mine >= t.maxPeer {
		t.seen.RefusedPeer++
		return nil, nil
	}
	if t.total >= t.maxConns || t.queued >= t.maxPending {
		heavy, most := "", 0
		for p, q := range t.peers {
			if len(q) > most || (len(q) == most && p < heavy) {
				heavy, most = p, len(q)
			}
		}
		if most <= mine {
			t.seen.RefusedFull++
			return nil, nil
		}
		victim = t.peers[heavy][0]
		t.unqueueLocked(victim)
		victim.state = connClosed
		t.total--
		t.seen.Evicted++
	}
	tc = &trackedConn{Conn: c, t: t, peer: peer}
	t.peers[peer] = append(t.peers[peer], tc)
	t.queued++
	t.total++
	t.seen.Accepted++
	return tc, victim
}

// stats is the tracker's counts.
func (t *tracker) stats() (total, pending int, seen Admission) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total, t.queued, t.seen
}

// fairListener admits each accepted connection through a tracker.
type fairListener struct {
	net.Listener
	t *tracker
}

func (l *fairListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc, victim := l.t.admit(c)
		if victim != nil {
			_ = victim.Conn.Close() // its slot is released already
		}
		if tc == nil {
			_ = c.Close()
			continue
		}
		return tc, nil
	}
}

// peerOf is a connection's peer: "uid:N" for a loopback client whose
// socket's owner can be read, else "ip:ADDR".
func peerOf(c net.Conn) string {
	ra, ok1 := c.RemoteAddr().(*net.TCPAddr)
	la, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return "addr:" + c.RemoteAddr().String()
	}
	if ra.IP.IsLoopback() {
		if uid, ok := socketUID(ra, la); ok {
			return "uid:" + strconv.FormatUint(uint64(uid), 10)
		}
	}
	return "ip:" + ra.IP.String()
}

// ownerConn marks the request's connection as the owner's.
func ownerConn(ctx context.Context) {
	if tc, ok := ctx.Value(connKey{}).(*trackedConn); ok {
		tc.owner()
	}
}

// Admission reports the board's connection counts: open, pending (not yet
// the owner's), and the decisions so far.
func (s *Server) Admission() (open, pending int, seen Admission) {
	s.mu.Lock()
	t := s.conns
	s.mu.Unlock()
	if t == nil {
		return 0, 0, Admission{}
	}
	return t.stats()
}
