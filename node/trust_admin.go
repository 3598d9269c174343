package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
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
var ErrNoTrust = errors.New("node: this node runs with --insecure-mesh and has no CA; restart it without --insecure-mesh (it makes one), or run `harn mesh init` on a fresh data dir")

// MeshAdmin runs one operator operation (see the Admin constants) with
// its arguments as JSON: an in-process form of the MeshAdmin service.
func (n *Node) MeshAdmin(ctx context.Context, op string, args []byte) (any, error) {
	var a adminArgs
	var err error
	switch op {
	case AdminKeyringOp:
		err = json.Unmarshal(args, &a.keyring)
	case AdminTokenCreate:
		err = json.Unmarshal(args, &a.token)
	case AdminTokenRevoke, AdminRevokeNode:
		err = json.Unmarshal(args, &a.name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return n.meshAdmin(ctx, op, a)
}

// adminArgs are an admin operation's arguments; each op reads its own.
type adminArgs struct {
	token   TokenCreateArgs
	keyring KeyringChange
	name    string // a token id (token.revoke) or a node (node.revoke)
}

// meshAdmin runs one operator operation.
func (n *Node) meshAdmin(ctx context.Context, op string, args adminArgs) (any, error) {
	if n.cl == nil {
		return nil, ErrNoMesh
	}
	return n.cl.admin(ctx, op, args)
}

// admin runs one operator operation on the mesh (Node.MeshAdmin).
func (c *cluster) admin(ctx context.Context, op string, args adminArgs) (any, error) {
	switch op {
	case AdminKeyringList:
		return c.keyringView(), nil
	case AdminKeyringOp:
		return c.changeKeyring(ctx, args.keyring)
	}
	if c.trust == nil {
		return nil, ErrNoTrust
	}
	switch op {
	case AdminTokenCreate:
		a := args.token
		ca := c.trust.authority()
		if ca == nil {
			return nil, ErrNotServer
		}
		role := trust.RoleNode
		if a.Server {
			role = trust.RoleServer
		}
		tok, rec, err := trust.NewToken(ca.Fingerprint(), trust.TokenOptions{Role: role, TTL: a.TTL, Uses: a.Uses}, c.clock.Now())
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if err := (&registryTokens{c: c}).Create(rec); err != nil {
			return nil, err
		}
		if err := shareCA(c.trust.dir); err != nil {
			return nil, err
		}
		return TokenCreated{Token: tok.String(), ID: tok.ID, Role: string(role), Expires: rec.Expires, Uses: rec.Uses,
			JoinAddr: c.gossipAddr(), JoinRPC: c.meta.RPCAddr}, nil
	case AdminTokenList:
		return (&registryTokens{c: c}).List()
	case AdminTokenRevoke:
		return args.name, (&registryTokens{c: c}).Revoke(args.name)
	case AdminCARotate, AdminCAFinish:
		return c.rotateCA(ctx, op == AdminCAFinish)
	case AdminCAStatus:
		return c.caStatus(), nil
	case AdminRevokeNode:
		return c.revokeNode(ctx, args.name)
	}
	return nil, fmt.Errorf("%w: unknown admin op %q", ErrConfig, op)
}

// removedNames are the nodes `harn mesh remove` took out: a revoked
// certificate names them and no certificate issued to them is still
// valid. The leader does not add them back to the raft configuration,
// and no node pulls their presence. Nil on a mesh without a CA.
func (c *cluster) removedNames() map[string]bool {
	if c.trust == nil {
		return nil
	}
	var out map[string]bool
	for _, e := range c.store.KVList(kvRevokedPrefix) {
		var rec revokedRecord
		if json.Unmarshal(e.Value, &rec) == nil && rec.Name != "" {
			if out == nil {
				out = map[string]bool{}
			}
			out[rec.Name] = true
		}
	}
	if out == nil {
		return nil
	}
	for _, e := range c.store.KVList(kvIssuedPrefix) {
		var rec issuedRecord
		if json.Unmarshal(e.Value, &rec) == nil {
			delete(out, rec.Name) // rejoined with a new token
		}
	}
	return out
}

// revokeNode puts every certificate issued to name on the revocation list.
func (c *cluster) revokeNode(ctx context.Context, name string) (Revoked, error) {
	out := Revoked{Node: name}
	at := c.clock.Now().UTC()
	var ops []raftstore.KVOp
	for _, e := range c.store.KVList(kvIssuedPrefix) {
		var rec issuedRecord
		if json.Unmarshal(e.Value, &rec) != nil || rec.Name != name {
			continue
		}
		serial := e.Key[len(kvIssuedPrefix):]
		b, _ := json.Marshal(revokedRecord{Name: name, At: at})
		ops = append(ops, raftstore.KVOp{Key: kvRevokedPrefix + serial, Value: b},
			raftstore.KVOp{Key: e.Key, Delete: true})
		out.Serials = append(out.Serials, serial)
	}
	if len(ops) == 0 {
		return out, nil
	}
	for len(ops) > 0 {
		k := min(len(ops), raftstore.MaxKVOps)
		if _, err := c.applyCommand(ctx, raftstore.KVCommand(ops[:k]...)); err != nil {
			return out, err
		}
		ops = ops[k:]
	}
	c.log.Info("certificates revoked", "node", name, "serials", len(out.Serials))
	return out, nil
}

func (c *cluster) keyringView() KeyringView {
	var v KeyringView
	if e, ok := c.store.KVGet(kvKeyring); ok {
		if k, err := DecodeKeyring(e.Value); err == nil {
			v.Primary = DisplayKey(k.Primary)
			for _, x := range k.Keys {
				v.Keys = append(v.Keys, DisplayKey(x))
			}
		}
	}
	if p, all, err := c.mesh.Keys(); err == nil {
		v.NodePrimary = DisplayKey(p)
		for _, x := range all {
			v.NodeKeys = append(v.NodeKeys, DisplayKey(x))
		}
	}
	return v
}

// DisplayKey renders a gossip key for operators (base64; the registry and
// the local socket are both private).
func DisplayKey(k []byte) string { return mesh.EncodeKey(k) }

// changeKeyring changes the registry's gossip keyring; every node applies
// it within TrustSync.
func (c *cluster) changeKeyring(ctx context.Context, a KeyringChange) (KeyringView, error) {
	key, err := DecodeGossipKey(a.Key)
	if err != nil {
		return KeyringView{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for attempt := 0; attempt < 20; attempt++ {
		var k Keyring
		var op raftstore.KVOp
		if e, ok := c.store.KVGet(kvKeyring); ok {
			cur, err := DecodeKeyring(e.Value)
			if err != nil {
				return KeyringView{}, err
			}
			k, op = *cur, raftstore.KVOp{Key: kvKeyring, IfIndex: e.Index}
		} else {
			p, all, err := c.mesh.Keys()
			if err != nil {
				return KeyringView{}, err
			}
			k, op = Keyring{Primary: p, Keys: all}, raftstore.KVOp{Key: kvKeyring, IfAbsent: true}
		}
		has := false
		for _, x := range k.Keys {
			has = has || string(x) == string(key)
		}
		switch a.Op {
		case "install":
			if !has {
				k.Keys = append(k.Keys, key)
			}
		case "use":
			if !has {
				return KeyringView{}, fmt.Errorf("%w: the key is not installed; run `harn keyring install` first", ErrConfig)
			}
			k.Primary = key
		case "remove":
			if string(k.Primary) == string(key) {
				return KeyringView{}, fmt.Errorf("%w: the key is the primary; `harn keyring use` another key first", ErrConfig)
			}
			var keep [][]byte
			for _, x := range k.Keys {
				if string(x) != string(key) {
					keep = append(keep, x)
				}
			}
			k.Keys = keep
		default:
			return KeyringView{}, fmt.Errorf("%w: keyring op %q: use install, use or remove", ErrConfig, a.Op)
		}
		op.Value, _ = json.Marshal(k)
		_, err := c.applyCommand(ctx, raftstore.KVCommand(op))
		if errors.Is(err, raftstore.ErrKVConflict) {
			continue
		}
		if err != nil {
			return KeyringView{}, err
		}
		c.syncKeyring()
		return c.keyringView(), nil
	}
	return KeyringView{}, fmt.Errorf("%w: the keyring kept changing", raftstore.ErrKVConflict)
}

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
	if n.cl == nil || !n.cl.hasTrust() {
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
