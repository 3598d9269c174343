package meshtrust

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

// The operator's trust operations (MeshAdmin, on the local socket only):
// join tokens, CA rotation, revocation of a removed node's certificates.
// The gossip keyring's are the cluster's.

// CreateToken makes a join token (servers holding the CA). The caller
// fills in the join addresses.
func (t *Trust) CreateToken(a wire.TokenCreateArgs) (wire.TokenCreated, error) {
	ca := t.Authority()
	if ca == nil {
		return wire.TokenCreated{}, ErrNotServer
	}
	role := trust.RoleNode
	if a.Server {
		role = trust.RoleServer
	}
	tok, rec, err := trust.NewToken(ca.Fingerprint(), trust.TokenOptions{Role: role, TTL: a.TTL, Uses: a.Uses}, t.clock.Now())
	if err != nil {
		return wire.TokenCreated{}, fmt.Errorf("%w: %w", layout.ErrConfig, err)
	}
	if err := (&registryTokens{t: t}).Create(rec); err != nil {
		return wire.TokenCreated{}, err
	}
	if err := shareCA(t.dir); err != nil {
		return wire.TokenCreated{}, err
	}
	return wire.TokenCreated{Token: tok.String(), ID: tok.ID, Role: string(role), Expires: rec.Expires, Uses: rec.Uses}, nil
}

// Tokens is the registry's store of join tokens (list, revoke).
func (t *Trust) Tokens() trust.TokenStore { return &registryTokens{t: t} }

// RevokeNode puts every certificate issued to name on the revocation list.
func (t *Trust) RevokeNode(ctx context.Context, name string) (wire.Revoked, error) {
	out := wire.Revoked{Node: name}
	at := t.clock.Now().UTC()
	var ops []raftstore.KVOp
	for _, e := range t.host.KVList(KVIssuedPrefix) {
		var rec issuedRecord
		if json.Unmarshal(e.Value, &rec) != nil || rec.Name != name {
			continue
		}
		serial := e.Key[len(KVIssuedPrefix):]
		b, _ := json.Marshal(revokedRecord{Name: name, At: at})
		ops = append(ops, raftstore.KVOp{Key: KVRevokedPrefix + serial, Value: b},
			raftstore.KVOp{Key: e.Key, Delete: true})
		out.Serials = append(out.Serials, serial)
	}
	if len(ops) == 0 {
		return out, nil
	}
	for len(ops) > 0 {
		k := min(len(ops), raftstore.MaxKVOps)
		if _, err := t.host.Apply(ctx, raftstore.KVCommand(ops[:k]...)); err != nil {
			return out, err
		}
		ops = ops[k:]
	}
	t.log.Info("certificates revoked", "node", name, "serials", len(out.Serials))
	return out, nil
}
