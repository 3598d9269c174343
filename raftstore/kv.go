package raftstore

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The registry's small key-value space: mesh-wide settings that are not
// sessions (join tokens, the certificate revocation list, the gossip
// keyring). Each key carries the log index of its last change, which a
// conditional write compares, so that a read-check-write (redeeming a join
// token) is one deterministic state-machine step.

// ErrKVConflict: a conditional key-value write found the key changed; the
// whole command changed nothing. Read again and retry.
var ErrKVConflict = errors.New("raftstore: key changed since it was read")

// KV limits.
const (
	MaxKVKey   = 256
	MaxKVValue = 64 << 10
	MaxKVOps   = 256
)

// OpKV applies 1..MaxKVOps key-value writes, all or none.
const OpKV Op = "kv"

// KVOp is one key-value write.
type KVOp struct {
	Key string `json:"key"`
	// Value is the new value; ignored with Delete.
	Value  []byte `json:"value,omitempty"`
	Delete bool   `json:"delete,omitempty"`
	// IfIndex, when set, applies the write only while the key's last change
	// is at this index; IfAbsent only while the key does not exist.
	IfIndex  uint64 `json:"if_index,omitempty"`
	IfAbsent bool   `json:"if_absent,omitempty"`
}

// KVEntry is one stored key.
type KVEntry struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
	// Index is the log index of the key's last change.
	Index uint64 `json:"index"`
}

// KVCommand returns the command that applies ops in one log entry.
func KVCommand(ops ...KVOp) Command { return Command{Op: OpKV, KV: ops} }

func validKVKey(k string) error {
	if k == "" || len(k) > MaxKVKey {
		return invalid("kv.key", fmt.Sprintf("1 to %d bytes", MaxKVKey))
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c >= 0x7f {
			return invalid("kv.key", "printable ASCII without spaces")
		}
	}
	return nil
}

func (c Command) validateKV() error {
	if len(c.KV) == 0 || len(c.KV) > MaxKVOps || len(c.Upserts) != 0 || len(c.SessionIDs) != 0 {
		return invalid("kv", fmt.Sprintf("kv carries 1 to %d writes and nothing else", MaxKVOps))
	}
	for _, o := range c.KV {
		if err := validKVKey(o.Key); err != nil {
			return err
		}
		if len(o.Value) > MaxKVValue {
			return invalid("kv.value", fmt.Sprintf("longer than %d bytes", MaxKVValue))
		}
		if o.IfAbsent && o.IfIndex != 0 {
			return invalid("kv", "if_absent and if_index exclude each other")
		}
	}
	return nil
}

// applyKV applies ops at index, all or none (the caller holds r.mu).
func (r *Registry) applyKV(index uint64, ops []KVOp) error {
	for _, o := range ops {
		e, ok := r.kv[o.Key]
		if o.IfAbsent && ok {
			return fmt.Errorf("%w: %s exists", ErrKVConflict, o.Key)
		}
		if o.IfIndex != 0 && (!ok || e.Index != o.IfIndex) {
			return fmt.Errorf("%w: %s", ErrKVConflict, o.Key)
		}
	}
	r.kvIndex = index
	for _, o := range ops {
		if o.Delete {
			delete(r.kv, o.Key)
			continue
		}
		var v []byte // an empty value is stored as nil, as JSON decodes it
		if len(o.Value) > 0 {
			v = slices.Clone(o.Value)
		}
		r.kv[o.Key] = KVEntry{Key: o.Key, Value: v, Index: index}
	}
	return nil
}

// KVIndex is the index of the last entry that changed the key-value
// space (0: none since the registry was restored or made): a follower of
// the mesh-wide settings reads them again only when it moves.
func (r *Registry) KVIndex() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.kvIndex
}

// KVGet returns one key.
func (r *Registry) KVGet(key string) (KVEntry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.kv[key]
	e.Value = slices.Clone(e.Value)
	return e, ok
}

// KVList returns the keys with prefix, sorted.
func (r *Registry) KVList(prefix string) []KVEntry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []KVEntry
	for _, k := range slices.Sorted(maps.Keys(r.kv)) {
		if strings.HasPrefix(k, prefix) {
			e := r.kv[k]
			e.Value = slices.Clone(e.Value)
			out = append(out, e)
		}
	}
	return out
}

func (r *Registry) kvListLocked() []KVEntry {
	out := make([]KVEntry, 0, len(r.kv))
	for _, k := range slices.Sorted(maps.Keys(r.kv)) {
		out = append(out, r.kv[k])
	}
	return out
}

// KVGet returns one key of the local replica (possibly stale).
func (s *Store) KVGet(key string) (KVEntry, bool) { return s.reg.KVGet(key) }

// KVList returns the keys with prefix of the local replica, sorted.
func (s *Store) KVList(prefix string) []KVEntry { return s.reg.KVList(prefix) }

// KVIndex is the local replica's Registry.KVIndex.
func (s *Store) KVIndex() uint64 { return s.reg.KVIndex() }
