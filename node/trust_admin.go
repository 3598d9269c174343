package node

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/meshtrust"
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
