package node

import (
	"context"
	"fmt"
	"net"
	"os/user"
	"strconv"
	"strings"

	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"

	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/text"
)

// Who made an operator action. A local action is recorded as the calling
// process's user on this node, from the socket's peer credentials:
// `alice (uid 1000)@laptop`. A routed action carries the operator part
// (`alice (uid 1000)`) to the target, which sanitizes and bounds it and
// appends the node name from the caller's verified certificate, never one
// the caller claims.

// maxOperatorLen bounds the operator part of an action's record (runes).
const maxOperatorLen = 96

// localPeer is the AuthInfo of a connection on the local socket: the uid
// of the process at the other end, when the system tells.
type localPeer struct {
	credentials.CommonAuthInfo
	uid   int
	known bool
	// pid is the peer's process id at connect (0 when the system does
	// not tell): the caller whose ancestry a lifecycle declaration checks.
	pid int
}

func (localPeer) AuthType() string { return "unix-peer" }

// localCreds is the local socket's transport credentials: no security
// (the socket's mode and directory guard it), but every connection learns
// its peer's uid (SO_PEERCRED, LOCAL_PEERCRED) once, at accept.
type localCreds struct{}

func (localCreds) ClientHandshake(_ context.Context, _ string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c, localPeer{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
}

func (localCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if lc, ok := c.(*localConn); ok { // the mux read the peer at accept
		return c, lc.peer, nil
	}
	p := localPeer{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}
	if uc, ok := c.(*net.UnixConn); ok {
		if uid, known, err := peerUID(uc); err == nil && known {
			p.uid, p.known = uid, true
		}
		p.pid = peerPID(uc)
	}
	return c, p, nil
}

func (localCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "insecure"}
}
func (c localCreds) Clone() credentials.TransportCredentials { return c }
func (localCreds) OverrideServerName(string) error           { return nil }

// localCallerPID is the process id of the local socket's peer, 0 when
// ctx is not a local socket call or the system does not tell.
func localCallerPID(ctx context.Context) int {
	p, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return 0
	}
	lp, ok := p.AuthInfo.(localPeer)
	if !ok {
		return 0
	}
	return lp.pid
}

// localOperator names the process that called on the local socket
// (`alice (uid 1000)`), or "" when ctx is not a local socket call or its
// peer is unknown.
func localOperator(ctx context.Context) string {
	p, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return ""
	}
	lp, ok := p.AuthInfo.(localPeer)
	if !ok || !lp.known {
		return ""
	}
	id := strconv.Itoa(lp.uid)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return CleanOperator(u.Username + " (uid " + id + ")")
	}
	return "uid " + id
}

// CleanOperator bounds and sanitizes the operator part of a record: no
// control characters, no '@' (the node part follows the last one), at
// most maxOperatorLen runes, "operator" when nothing is left.
func CleanOperator(s string) string {
	s = text.OneLine(s)
	s = strings.ReplaceAll(s, "@", "_")
	s = text.Clip(s, maxOperatorLen)
	if s == "" {
		return "operator"
	}
	return s
}

// operatorBy is the record of a local action: the socket peer's identity
// at this node. An in-process caller (the board) passes its own given
// name; a socket caller's given name is ignored, so that no local client
// can write another's name into the record.
func (n *Node) operatorBy(ctx context.Context, given string) string {
	if op := localOperator(ctx); op != "" {
		return op + "@" + n.cfg.Name
	}
	if given != "" && !fromSocket(ctx) {
		op, node := splitBy(given)
		if node == "" {
			node = n.cfg.Name
		}
		return CleanOperator(op) + "@" + text.Clip(text.OneLine(node), trust.MaxNameLen)
	}
	return "operator@" + n.cfg.Name
}

// fromSocket reports whether ctx is a call on the local socket.
func fromSocket(ctx context.Context) bool {
	p, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return false
	}
	_, ok = p.AuthInfo.(localPeer)
	return ok
}

// splitBy splits "op@node" at its last '@'.
func splitBy(by string) (op, node string) {
	i := strings.LastIndexByte(by, '@')
	if i < 0 {
		return by, ""
	}
	return by[:i], by[i+1:]
}

// operatorPart is what a routed action carries of a local record: the
// operator without this node's name (the target takes the node from the
// caller's certificate).
func operatorPart(by string) string {
	op, _ := splitBy(by)
	return CleanOperator(op)
}

// remoteBy is the target's record of a routed action: the caller's
// operator part, sanitized and bounded, at the caller's certificate name.
func remoteBy(op string, caller trust.Identity) string {
	return fmt.Sprintf("%s@%s", CleanOperator(op), caller.Name)
}
