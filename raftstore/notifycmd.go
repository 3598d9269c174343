package raftstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode"
)

// The mesh's webhook configurations live in the registry beside the
// session records: `harn notify add` and `harn notify remove` write them
// through the leader, and every node reads its replica to configure its
// notifications engine. The registry keeps each webhook's specification as
// opaque JSON under its ID: what a webhook is belongs to the node's
// notifications room (node/notify), which validates it before writing and
// again when reading.

// Commands of the webhook configurations.
const (
	// OpNotifySet adds a webhook, or replaces the one with the same ID.
	OpNotifySet Op = "notify_set"
	// OpNotifyRemove removes a webhook by ID (nothing when absent).
	OpNotifyRemove Op = "notify_remove"
)

// Bounds of the webhook configurations.
const (
	// MaxNotifyHooks bounds the webhooks of a mesh. A set of a new ID
	// beyond it is refused (ErrNotifyFull) by every replica alike.
	MaxNotifyHooks = 32
	// MaxNotifySpecBytes bounds one webhook's specification.
	MaxNotifySpecBytes = 8 << 10
	// MaxNotifyIDLen bounds a webhook ID.
	MaxNotifyIDLen = 64
)

// ErrNotifyFull: the registry already holds MaxNotifyHooks webhooks.
var ErrNotifyFull = errors.New("raftstore: the mesh already has the most webhooks it keeps")

// NotifyHook is one webhook configuration as the registry keeps it.
type NotifyHook struct {
	ID string `json:"id"`
	// Spec is the webhook's specification, a JSON object the registry
	// does not read. It is empty in an OpNotifyRemove.
	Spec json.RawMessage `json:"spec,omitempty"`
}

// NotifySetCommand returns the command that adds or replaces a webhook.
func NotifySetCommand(id string, spec []byte) Command {
	return Command{Op: OpNotifySet, Notify: &NotifyHook{ID: id, Spec: spec}}
}

// NotifyRemoveCommand returns the command that removes a webhook.
func NotifyRemoveCommand(id string) Command {
	return Command{Op: OpNotifyRemove, Notify: &NotifyHook{ID: id}}
}

func isNotifyOp(op Op) bool { return op == OpNotifySet || op == OpNotifyRemove }

// validateNotify checks a command that is a notify op or carries a notify
// part: only the notify ops carry one, and they carry nothing else.
func (c Command) validateNotify() error {
	if !isNotifyOp(c.Op) {
		return invalid("notify", fmt.Sprintf("op %q carries no notify; only notify_set and notify_remove do", c.Op))
	}
	if len(c.Upserts) != 0 || len(c.SessionIDs) != 0 {
		return invalid("notify", "a notify command carries no upserts and no session_ids")
	}
	h := c.Notify
	if h == nil {
		return invalid("notify", "required")
	}
	if h.ID == "" {
		return invalid("notify.id", "required")
	}
	if len(h.ID) > MaxNotifyIDLen {
		return invalid("notify.id", fmt.Sprintf("longer than %d bytes", MaxNotifyIDLen))
	}
	for _, r := range h.ID {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) || r == ' ' {
			return invalid("notify.id", "use printable ASCII without spaces")
		}
	}
	if c.Op == OpNotifyRemove {
		if len(h.Spec) != 0 {
			return invalid("notify.spec", "notify_remove carries no spec")
		}
		return nil
	}
	if len(h.Spec) > MaxNotifySpecBytes {
		return invalid("notify.spec", fmt.Sprintf("longer than %d bytes", MaxNotifySpecBytes))
	}
	trimmed := bytes.TrimLeft(h.Spec, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(h.Spec) {
		return invalid("notify.spec", "must be a JSON object")
	}
	return nil
}

// notifyState is the registry's part for webhook configurations.
type notifyState struct {
	hooks map[string]NotifyHook
	// index is the log index of the last entry that changed hooks.
	index uint64
}

// notifySnapshot is the notify part of a registry snapshot.
type notifySnapshot struct {
	Notify      []NotifyHook `json:"notify,omitempty"`
	NotifyIndex uint64       `json:"notify_index,omitempty"`
}

// applyNotify applies a validated notify command. Callers hold r.mu.
func (r *Registry) applyNotify(index uint64, c Command) error {
	h := c.Notify
	cur, ok := r.notify.hooks[h.ID]
	switch c.Op {
	case OpNotifySet:
		// Kept compact, as a snapshot writes it, so that a replica restored
		// from a snapshot compares specs as one that applied the log.
		var spec bytes.Buffer
		if err := json.Compact(&spec, h.Spec); err != nil {
			return invalid("notify.spec", "must be a JSON object")
		}
		if ok && bytes.Equal(cur.Spec, spec.Bytes()) {
			return nil
		}
		if !ok && len(r.notify.hooks) >= MaxNotifyHooks {
			return fmt.Errorf("%w (%d); remove one first", ErrNotifyFull, MaxNotifyHooks)
		}
		if r.notify.hooks == nil {
			r.notify.hooks = map[string]NotifyHook{}
		}
		r.notify.hooks[h.ID] = NotifyHook{ID: h.ID, Spec: spec.Bytes()}
	case OpNotifyRemove:
		if !ok {
			return nil
		}
		delete(r.notify.hooks, h.ID)
	}
	r.notify.index = index
	return nil
}

// notifyLocked returns the webhooks by ID and the index of their last
// change. Callers hold r.mu.
func (r *Registry) notifyLocked() notifySnapshot {
	out := notifySnapshot{NotifyIndex: r.notify.index}
	for _, id := range slices.Sorted(maps.Keys(r.notify.hooks)) {
		h := r.notify.hooks[id]
		out.Notify = append(out.Notify, NotifyHook{ID: h.ID, Spec: slices.Clone(h.Spec)})
	}
	return out
}

// restoreNotify is the notify part of a restored snapshot.
func restoreNotify(s notifySnapshot) notifyState {
	st := notifyState{index: s.NotifyIndex}
	for _, h := range s.Notify {
		if st.hooks == nil {
			st.hooks = map[string]NotifyHook{}
		}
		st.hooks[h.ID] = h
	}
	return st
}

// NotifyHooks returns a copy of the webhook configurations, sorted by ID,
// and the log index of their last change (0: never set).
func (r *Registry) NotifyHooks() ([]NotifyHook, uint64) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.notifyLocked()
	return s.Notify, s.NotifyIndex
}

// NotifyHooks returns the local replica's webhook configurations and the
// index of their last change (possibly stale; see Staleness).
func (s *Store) NotifyHooks() ([]NotifyHook, uint64) { return s.reg.NotifyHooks() }
