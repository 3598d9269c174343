package node

import (
	"context"
	"fmt"
	"os/user"
	"strconv"
	"strings"

	"github.com/harn-dev/harn/node/localapi"
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

// localCallerPID is the process id of the local socket's peer, 0 when
// ctx is not a local socket call or the system does not tell.
func localCallerPID(ctx context.Context) int {
	lp, _ := localapi.PeerFrom(ctx)
	return lp.PID
}

// localOperator names the process that called on the local socket
// (`alice (uid 1000)`), or "" when ctx is not a local socket call or its
// peer is unknown.
func localOperator(ctx context.Context) string {
	lp, ok := localapi.PeerFrom(ctx)
	if !ok || !lp.Known {
		return ""
	}
	id := strconv.Itoa(lp.UID)
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
	_, ok := localapi.PeerFrom(ctx)
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
