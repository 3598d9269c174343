// Package boardlimits holds the bounds of the node's web board: its room is
// the numbers `harn node`'s flags default to, apart from the board's server
// (and html/template), so that the client links them without the board.
package boardlimits

import "time"

// Limits bound what one client can hold of the board: time per request,
// bytes per request, streams, connections.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers, ReadTimeout
	// its headers and body (a slow POST body is cut there).
	ReadHeaderTimeout, ReadTimeout time.Duration
	// WriteTimeout bounds writing a response; an event stream instead
	// gets it as the deadline of each write.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection without a request.
	IdleTimeout time.Duration
	// MaxBody is the largest request body, MaxHeader the largest header
	// block, in bytes.
	MaxBody   int64
	MaxHeader int
	// MaxStreams caps the open event streams of the board, and
	// MaxClientStreams those of one client (one remote address); a stream
	// over either gets 429.
	MaxStreams, MaxClientStreams int
	// MaxConns caps the open connections. Connections not yet proven by
	// the token hold at most three quarters of it together, and
	// MaxPeerConns per peer (a local user on loopback, else an address);
	// see conns.go for who is closed when they are full.
	MaxConns     int
	MaxPeerConns int
}

// Default are the limits of a board configured with none.
var Default = Limits{
	ReadHeaderTimeout: 3 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      60 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxBody:           64 << 10,
	MaxHeader:         64 << 10,
	MaxStreams:        64,
	MaxClientStreams:  8,
	MaxConns:          256,
	MaxPeerConns:      16,
}

// WithDefaults fills the zero fields of l from Default.
func (l Limits) WithDefaults() Limits {
	d := Default
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	set(&l.ReadTimeout, d.ReadTimeout)
	set(&l.WriteTimeout, d.WriteTimeout)
	set(&l.IdleTimeout, d.IdleTimeout)
	if l.ReadHeaderTimeout > l.ReadTimeout {
		l.ReadHeaderTimeout = l.ReadTimeout
	}
	if l.MaxBody <= 0 {
		l.MaxBody = d.MaxBody
	}
	for _, p := range []struct {
		v   *int
		def int
	}{{&l.MaxHeader, d.MaxHeader}, {&l.MaxStreams, d.MaxStreams},
		{&l.MaxClientStreams, d.MaxClientStreams}, {&l.MaxConns, d.MaxConns}, {&l.MaxPeerConns, d.MaxPeerConns}} {
		if *p.v <= 0 {
			*p.v = p.def
		}
	}
	if l.MaxClientStreams > l.MaxStreams {
		l.MaxClientStreams = l.MaxStreams
	}
	return l
}
