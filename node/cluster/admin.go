package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/meshtrust"
)

// ErrNoTrust: the operation needs a mesh with a CA.
var ErrNoTrust = errors.New("node: this node runs with --insecure-mesh and has no CA; restart it without --insecure-mesh (it makes one), or run `harn mesh init` on a fresh data dir")

// AdminArgs are an operator operation's arguments; each op reads its own.
type AdminArgs struct {
	Token   wire.TokenCreateArgs
	Keyring wire.KeyringChange
	Name    string // a token id (token.revoke) or a node (node.revoke)
}

// Admin runs one operator operation on the mesh (the MeshAdmin service,
// on the local socket only): the gossip keyring here, join tokens, CA
// rotation and revocations in the trust room.
func (c *Cluster) Admin(ctx context.Context, op string, args AdminArgs) (any, error) {
	switch op {
	case wire.AdminKeyringList:
		return c.keyring.view(), nil
	case wire.AdminKeyringOp:
		return c.keyring.change(ctx, args.Keyring)
	}
	t := c.trust
	if t == nil {
		return nil, ErrNoTrust
	}
	switch op {
	case wire.AdminTokenCreate:
		tc, err := t.CreateToken(args.Token)
		if err != nil {
			return nil, err
		}
		tc.JoinAddr, tc.JoinRPC = c.Addrs().Gossip, c.meta.RPCAddr
		return tc, nil
	case wire.AdminTokenList:
		return t.Tokens().List()
	case wire.AdminTokenRevoke:
		return args.Name, t.Tokens().Revoke(args.Name)
	case wire.AdminCARotate, wire.AdminCAFinish:
		return t.RotateCA(ctx, op == wire.AdminCAFinish)
	case wire.AdminCAStatus:
		return t.CAStatus(), nil
	case wire.AdminRevokeNode:
		return t.RevokeNode(ctx, args.Name)
	}
	return nil, fmt.Errorf("%w: unknown admin op %q", ErrConfig, op)
}

// follower follows the registry's mesh-wide settings on this node: the
// session quota (written by the leader), the task runtimes' switches, the
// gossip keyring and the trust records.
type follower struct{ c *Cluster }

// loop follows every TrustSync.
func (f follower) loop() {
	c := f.c
	t := c.clock.NewTicker(c.cfg.TrustSync)
	defer t.Stop()
	for {
		f.syncSessionQuota()
		f.once()
		select {
		case <-c.stop:
			return
		case <-t.C():
		}
	}
}

// once follows the registry one time.
func (f follower) once() {
	c := f.c
	c.local.ApplySwitches(meshtrust.Switches(c.reg.KVList(meshtrust.SwitchPrefix)))
	c.keyring.sync()
	if c.trust != nil {
		c.trust.Sync()
	}
}
