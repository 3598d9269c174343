// Package operator is the room of who acts on a node: the identity of an
// operator action's caller (a local socket peer's user, or a routed
// action's operator at the caller's verified certificate name) and the
// gate a caller on another node passes before it may act here (the
// node's --remote-control, --remote-watch and --remote-exec policies).
// It knows the rest of the node through nothing: the root gives it the
// node's name and policies.
package operator

import (
	"context"
	"fmt"
	"net"
	"os/user"
	"strconv"
	"strings"

	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/text"
)

// Who made an operator action. A local action is recorded as the calling
// process's user on this node, from the socket's peer credentials:
// `alice (uid 1000)@laptop`. A routed action carries the operator part
// (`alice (uid 1000)`) to the target, which sanitizes and bounds it and
// appends the node name from the caller's verified certificate, never one
// the caller claims.

// MaxLen bounds the operator part of an action's record (runes).
const MaxLen = 96

// Peer is the process at the other end of a connection on the local
// socket: its uid, when the system tells, read once at accept
// (node/localapi).
type Peer struct {
	UID   int
	Known bool
	// PID is the peer's process id at connect (0 when the system does
	// not tell): the caller whose ancestry a lifecycle declaration checks.
	PID int
}

// PeerOf reads a local socket connection's peer (SO_PEERCRED,
// LOCAL_PEERCRED); a connection of another kind has an unknown peer.
func PeerOf(c net.Conn) Peer {
	var p Peer
	if uc, ok := c.(*net.UnixConn); ok {
		if uid, known, err := layout.PeerUID(uc); err == nil && known {
			p.UID, p.Known = uid, true
		}
		p.PID = layout.PeerPID(uc)
	}
	return p
}

type peerKey struct{}

// WithPeer is ctx as a call on the local socket from p.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// peerOf is the local socket peer of ctx's call; false when ctx is not
// one (an in-process caller, a call from another node).
func peerOf(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// CallerPID is the process id of the local socket's peer, 0 when ctx is
// not a local socket call or the system does not tell.
func CallerPID(ctx context.Context) int {
	lp, _ := peerOf(ctx)
	return lp.PID
}

// Owner reports whether ctx is a call on the local socket from uid.
func Owner(ctx context.Context, uid int) bool {
	lp, ok := peerOf(ctx)
	return ok && lp.Known && lp.UID == uid
}

// Local names the process that called on the local socket
// (`alice (uid 1000)`), or "" when ctx is not a local socket call or its
// peer is unknown.
func Local(ctx context.Context) string {
	lp, ok := peerOf(ctx)
	if !ok || !lp.Known {
		return ""
	}
	id := strconv.Itoa(lp.UID)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return Clean(u.Username + " (uid " + id + ")")
	}
	return "uid " + id
}

// Clean bounds and sanitizes the operator part of a record: no control
// characters, no '@' (the node part follows the last one), at most MaxLen
// runes, "operator" when nothing is left.
func Clean(s string) string {
	s = text.OneLine(s)
	s = strings.ReplaceAll(s, "@", "_")
	s = text.Clip(s, MaxLen)
	if s == "" {
		return "operator"
	}
	return s
}

// By is the record of a local action on node: the socket peer's identity
// at this node. An in-process caller (the board) passes its own given
// name; a socket caller's given name is ignored, so that no local client
// can write another's name into the record.
func By(ctx context.Context, node, given string) string {
	if op := Local(ctx); op != "" {
		return op + "@" + node
	}
	if _, sock := peerOf(ctx); given != "" && !sock {
		op, at := Split(given)
		if at == "" {
			at = node
		}
		return Clean(op) + "@" + text.Clip(text.OneLine(at), trust.MaxNameLen)
	}
	return "operator@" + node
}

// Split splits "op@node" at its last '@'.
func Split(by string) (op, node string) {
	i := strings.LastIndexByte(by, '@')
	if i < 0 {
		return by, ""
	}
	return by[:i], by[i+1:]
}

// Part is what a routed action carries of a local record: the operator
// without this node's name (the target takes the node from the caller's
// certificate).
func Part(by string) string {
	op, _ := Split(by)
	return Clean(op)
}

// Remote is the target's record of a routed action: the caller's
// operator part, sanitized and bounded, at the caller's certificate name.
func Remote(op string, caller trust.Identity) string {
	return fmt.Sprintf("%s@%s", Clean(op), caller.Name)
}
