package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
)

// The operator's mesh trust operations, served on the local socket only
// (MeshAdmin): join tokens, the gossip keyring, revocation of a removed
// node's certificates.

// Admin operations and their bodies, in wire.
const (
	AdminTokenCreate = wire.AdminTokenCreate
	AdminTokenList   = wire.AdminTokenList
	AdminTokenRevoke = wire.AdminTokenRevoke
	AdminKeyringList = wire.AdminKeyringList
	AdminKeyringOp   = wire.AdminKeyringOp
	AdminRevokeNode  = wire.AdminRevokeNode
)

// The MeshAdmin bodies, in wire.
type (
	TokenCreateArgs = wire.TokenCreateArgs
	TokenCreated    = wire.TokenCreated
	KeyringChange   = wire.KeyringChange
	KeyringView     = wire.KeyringView
	Revoked         = wire.Revoked
)

// ErrNoTrust: the operation needs a mesh with a CA.
var ErrNoTrust = cluster.ErrNoTrust

// MeshAdmin runs one operator operation (see the Admin constants) with
// its arguments as JSON: an in-process form of the MeshAdmin service.
func (n *Node) MeshAdmin(ctx context.Context, op string, args []byte) (any, error) {
	var a cluster.AdminArgs
	var err error
	switch op {
	case AdminKeyringOp:
		err = json.Unmarshal(args, &a.Keyring)
	case AdminTokenCreate:
		err = json.Unmarshal(args, &a.Token)
	case AdminTokenRevoke, AdminRevokeNode:
		err = json.Unmarshal(args, &a.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return n.meshAdmin(ctx, op, a)
}

// meshAdmin runs one operator operation.
func (n *Node) meshAdmin(ctx context.Context, op string, args cluster.AdminArgs) (any, error) {
	if n.cl == nil {
		return nil, ErrNoMesh
	}
	return n.cl.Admin(ctx, op, args)
}

// DisplayKey renders a gossip key for operators (base64; the registry and
// the local socket are both private).
func DisplayKey(k []byte) string { return meshtrust.DisplayKey(k) }

// RemoteExec lists the launchers other nodes may start here
// (--remote-exec; none by default).
func (n *Node) RemoteExec() []string { return slices.Clone(n.cfg.Cluster.RemoteExec) }

// RemoteControl is this node's --remote-control policy.
func (n *Node) RemoteControl() trust.RemoteControl {
	rc, _ := trust.ParseRemoteControl(n.cfg.Cluster.RemoteControl) // checked by Validate
	return rc
}

// AuthorizeRemoteControl decides whether the caller of a cluster gRPC call
// (ctx is the handler's) may act on this node's agents: start, steer,
// cancel, confirm. It returns the caller's verified identity, or a
// *trust.RefusalError wrapping trust.ErrRemoteControl that names the
// caller's certificate, and logs the refusal here. On a mesh without a CA
// no caller has an identity, so every policy refuses.
func (n *Node) AuthorizeRemoteControl(ctx context.Context) (trust.Identity, error) {
	rc := n.RemoteControl()
	if n.cl == nil || !n.cl.HasTrust() {
		err := &trust.RefusalError{Err: trust.ErrRemoteControl, Detail: "this mesh has no CA, so callers cannot be told apart; policy is " + rc.String()}
		n.log.Warn("trust: remote control refused", "caller", "anonymous", "err", err)
		return trust.Identity{}, err
	}
	caller, err := trust.PeerFromContext(ctx)
	if err == nil {
		err = rc.Allow(caller)
	} else {
		err = &trust.RefusalError{Caller: caller, Err: trust.ErrRemoteControl, Detail: err.Error()}
	}
	if err != nil {
		n.log.Warn("trust: remote control refused", "caller", caller.String(), "err", err)
		return caller, err
	}
	return caller, nil
}
