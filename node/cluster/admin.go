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

// followState is what decides whether the registry's settings need
// following again: they change only with the key-value space, the
// leadership (the leader seeds the quota and the keyring), and the trust
// room's own pending work.
type followState struct {
	kvIndex       uint64
	leader        string
	leading, busy bool
}

// followGate remembers the state the settings were last followed at.
type followGate struct {
	last followState
	done bool
}

// due reports whether the settings need following at now: the first
// time, after any change, and while the trust room has pending work.
func (g *followGate) due(now followState) bool {
	if g.done && now == g.last && !now.busy {
		return false
	}
	g.last, g.done = now, true
	return true
}

// loop looks every TrustSync, and follows when something moved: an idle
// node reads and decodes nothing.
func (f follower) loop() {
	c := f.c
	t := c.clock.NewTicker(c.cfg.TrustSync)
	defer t.Stop()
	var gate followGate
	for {
		leader, _ := c.reg.Leader()
		now := followState{kvIndex: c.reg.KVIndex(), leader: leader, leading: c.reg.IsLeader(),
			busy: c.trust != nil && c.trust.Pending()}
		if gate.due(now) {
			f.syncSessionQuota()
			f.once()
			c.follows.Add(1)
		}
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
