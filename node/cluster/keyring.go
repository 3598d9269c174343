package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/raftstore"
)

// keyringSync keeps memberlist's gossip keyring equal to the registry's
// (and saves it in the trust directory), and seeds the registry with this
// node's on a leader that finds none.
type keyringSync struct {
	c   *Cluster
	mu  sync.Mutex
	idx uint64 // registry index of the gossip keyring last applied
}

// sync applies the registry's gossip keyring to memberlist (and saves
// it), or, on the leader, seeds the registry with this node's.
func (k *keyringSync) sync() {
	c := k.c
	if c.mesh == nil {
		return
	}
	e, ok := c.reg.KVGet(meshtrust.KVKeyring)
	if !ok {
		if c.trust == nil || !c.reg.IsLeader() {
			return
		}
		primary, all, err := c.mesh.Keys()
		if err != nil {
			return
		}
		b, _ := json.Marshal(meshtrust.Keyring{Primary: primary, Keys: all})
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ForwardTimeout)
		defer cancel()
		_, _ = c.Apply(ctx, raftstore.KVCommand(raftstore.KVOp{Key: meshtrust.KVKeyring, Value: b, IfAbsent: true}))
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if e.Index == k.idx {
		return
	}
	ring, err := meshtrust.DecodeKeyring(e.Value)
	if err != nil {
		c.log.Error("registry gossip keyring ignored", "err", err)
		k.idx = e.Index
		return
	}
	if err := applyKeyring(c.mesh, ring); err != nil {
		c.log.Error("apply the gossip keyring", "err", err)
		return
	}
	k.idx = e.Index
	if c.trust != nil {
		if err := meshtrust.SaveKeyring(c.trust.Dir(), ring); err != nil {
			c.log.Error("save the gossip keyring", "err", err)
		}
	}
	c.log.Info("gossip keyring applied", "keys", len(ring.Keys))
}

// applyKeyring makes memberlist's keyring equal k: install, use, remove.
func applyKeyring(m *mesh.Mesh, k *meshtrust.Keyring) error {
	for _, x := range k.Keys {
		if err := m.InstallKey(x); err != nil {
			return err
		}
	}
	if err := m.UseKey(k.Primary); err != nil {
		return err
	}
	_, have, err := m.Keys()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, x := range k.Keys {
		want[string(x)] = true
	}
	for _, x := range have {
		if !want[string(x)] {
			if err := m.RemoveKey(x); err != nil {
				return err
			}
		}
	}
	return nil
}

func (k *keyringSync) view() wire.KeyringView {
	c := k.c
	var v wire.KeyringView
	if e, ok := c.reg.KVGet(meshtrust.KVKeyring); ok {
		if ring, err := meshtrust.DecodeKeyring(e.Value); err == nil {
			v.Primary = meshtrust.DisplayKey(ring.Primary)
			for _, x := range ring.Keys {
				v.Keys = append(v.Keys, meshtrust.DisplayKey(x))
			}
		}
	}
	if p, all, err := c.mesh.Keys(); err == nil {
		v.NodePrimary = meshtrust.DisplayKey(p)
		for _, x := range all {
			v.NodeKeys = append(v.NodeKeys, meshtrust.DisplayKey(x))
		}
	}
	return v
}

// change changes the registry's gossip keyring; every node applies it
// within TrustSync.
func (k *keyringSync) change(ctx context.Context, a wire.KeyringChange) (wire.KeyringView, error) {
	c := k.c
	key, err := mesh.DecodeKey(a.Key)
	if err != nil {
		return wire.KeyringView{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for attempt := 0; attempt < 20; attempt++ {
		var ring meshtrust.Keyring
		var op raftstore.KVOp
		if e, ok := c.reg.KVGet(meshtrust.KVKeyring); ok {
			cur, err := meshtrust.DecodeKeyring(e.Value)
			if err != nil {
				return wire.KeyringView{}, err
			}
			ring, op = *cur, raftstore.KVOp{Key: meshtrust.KVKeyring, IfIndex: e.Index}
		} else {
			p, all, err := c.mesh.Keys()
			if err != nil {
				return wire.KeyringView{}, err
			}
			ring, op = meshtrust.Keyring{Primary: p, Keys: all}, raftstore.KVOp{Key: meshtrust.KVKeyring, IfAbsent: true}
		}
		has := false
		for _, x := range ring.Keys {
			has = has || string(x) == string(key)
		}
		switch a.Op {
		case "install":
			if !has {
				ring.Keys = append(ring.Keys, key)
			}
		case "use":
			if !has {
				return wire.KeyringView{}, fmt.Errorf("%w: the key is not installed; run `harn keyring install` first", ErrConfig)
			}
			ring.Primary = key
		case "remove":
			if string(ring.Primary) == string(key) {
				return wire.KeyringView{}, fmt.Errorf("%w: the key is the primary; `harn keyring use` another key first", ErrConfig)
			}
			var keep [][]byte
			for _, x := range ring.Keys {
				if string(x) != string(key) {
					keep = append(keep, x)
				}
			}
			ring.Keys = keep
		default:
			return wire.KeyringView{}, fmt.Errorf("%w: keyring op %q: use install, use or remove", ErrConfig, a.Op)
		}
		op.Value, _ = json.Marshal(ring)
		idx, err := c.Apply(ctx, raftstore.KVCommand(op))
		if errors.Is(err, raftstore.ErrKVConflict) {
			continue
		}
		if err != nil {
			return wire.KeyringView{}, err
		}
		if err := c.reg.WaitForApplied(ctx, idx); err != nil {
			return wire.KeyringView{}, err
		}
		k.sync()
		return k.view(), nil
	}
	return wire.KeyringView{}, fmt.Errorf("%w: the keyring kept changing", raftstore.ErrKVConflict)
}
