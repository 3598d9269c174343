package localapi

import (
	"context"
	"net"

	"github.com/harn-dev/harn/node/layout"
)

// Peer is the process at the other end of a local socket connection, as
// the system tells at accept (SO_PEERCRED, LOCAL_PEERCRED).
type Peer struct {
	// UID is the peer's user id, when Known.
	UID   int
	Known bool
	// PID is the peer's process id at connect (0 when the system does not
	// tell): the caller whose ancestry a lifecycle declaration checks.
	PID int
}

type peerKey struct{}

// WithPeer is ctx as a call on the local socket from p.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerFrom is the peer of a call on the local socket; false when ctx is
// not one (an in-process caller, a call from another node).
func PeerFrom(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// peerOf is c's peer.
func peerOf(c *net.UnixConn) Peer {
	var p Peer
	if uid, known, err := layout.PeerUID(c); err == nil && known {
		p.UID, p.Known = uid, true
	}
	p.PID = layout.PeerPID(c)
	return p
}
