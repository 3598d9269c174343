package raftstore

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/presence"
)

// Record is what the registry keeps of one session: the facts that must
// survive the loss of the session's node. Its JSON field names are stable.
type Record struct {
	SessionID       string    `json:"session_id"`
	ParentSessionID string    `json:"parent_session_id,omitempty"`
	Node            string    `json:"node,omitempty"`
	Agent           string    `json:"agent,omitempty"`
	Name            string    `json:"name,omitempty"`
	Task            string    `json:"task,omitempty"`
	TaskState       string    `json:"task_state"`
	BlockerReason   string    `json:"blocker_reason,omitempty"`
	LifecycleReason string    `json:"lifecycle_reason,omitempty"`
	Ended           bool      `json:"ended"`
	EndedAt         time.Time `json:"ended_at,omitzero"`
	EndReason       string    `json:"end_reason,omitempty"`
	Activity        string    `json:"activity"`
	ActivityAt      time.Time `json:"activity_updated_at,omitzero"`
	StartedAt       time.Time `json:"started_at,omitzero"`
	// UpdatedAt is the newest event time the record reflects (the
	// latest of its Clocks), not the time it was written.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// Index is the raft log index of the record's last change.
	Index uint64 `json:"index"`
	// Clocks are the event times at which each group last changed; an
	// upsert older than its group's clock changes nothing.
	Clocks Clocks `json:"clocks"`
}

// Clocks holds one event time per field group of a Record.
type Clocks struct {
	Identity  time.Time `json:"identity,omitzero"`
	Task      time.Time `json:"task,omitzero"`
	Lifecycle time.Time `json:"lifecycle,omitzero"`
	Activity  time.Time `json:"activity,omitzero"`
	End       time.Time `json:"end,omitzero"`
}

func (c *Clocks) latest() time.Time {
	t := c.Identity
	for _, u := range []time.Time{c.Task, c.Lifecycle, c.Activity, c.End} {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// Registry applies commands to a map of records. It is the whole state
// machine of the raft store, with no raft in it: deterministic (it reads no
// clock), and safe for concurrent use (one writer, many readers).
//
// Per field group, the last writer by event time wins, with ties broken by
// the group's value: applying the same set of upserts in any order gives
// the same records (except Index, which names the entry of the last
// change).
type Registry struct {
	mu      sync.RWMutex
	records map[string]Record
	kv      map[string]KVEntry
	kvIndex uint64 // the last entry that changed kv (kv.go)
	index   uint64
	claims  claimTable     // write claims (claimcmd.go)
	notify  notifyState    // webhook configurations (notifycmd.go)
	live    map[string]int // live sessions per node (owners.go)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{records: map[string]Record{}, claims: newClaimTable(), kv: map[string]KVEntry{}, live: map[string]int{}}
}

// MaxAhead bounds how far a record's times may lie after the time the
// leader appended its log entry. A later time (a record from the future,
// from a wrong clock or a forged write) is replaced by the append time, as
// the node replaces an event's (node/clockguard): one bad clock must not
// pin a record's fields until that date.
const MaxAhead = 5 * time.Minute

// Apply applies the command of log entry index with no bound on its times
// (an entry with no append time). See ApplyAt.
func (r *Registry) Apply(index uint64, c Command) error { return r.ApplyAt(index, time.Time{}, c) }

// ApplyAt applies the command of log entry index, appended by the leader at
// appendedAt (raft.Log.AppendedAt: part of the entry, so every replica sees
// the same one and stays deterministic). Every upsert time (ts, started_at)
// more than MaxAhead after appendedAt, truncated to the second, is replaced
// by that time; a zero appendedAt bounds nothing. An invalid command
// changes nothing and returns an error wrapping ErrInvalidCommand; the
// index is recorded as applied either way. An upsert of a session that
// another node holds, or that would put its node over the session quota,
// is left out (with the session's other upserts in the command) and the
// rest applies: the error then wraps ErrSessionTaken or ErrSessionQuota
// (owners.go).
func (r *Registry) ApplyAt(index uint64, appendedAt time.Time, c Command) error {
	err := c.Validate()
	r.mu.Lock()
	defer r.mu.Unlock()
	if index > r.index {
		r.index = index
	}
	if err != nil {
		return err
	}
	var refusal error
	switch c.Op {
	case OpUpsert, OpBatch:
		// A session another node holds, or one over its node's quota,
		// is left out, with every upsert of it in the command (owners.go).
		var refused map[string]bool
		refused, refusal = r.admitUpserts(c.Upserts)
		for i := range c.Upserts {
			if !refused[c.Upserts[i].SessionID] {
				r.upsert(index, appendedAt, &c.Upserts[i])
			}
		}
	case OpDelete:
		for _, id := range c.SessionIDs {
			if rec, ok := r.records[id]; ok {
				r.untrack(rec)
			}
			delete(r.records, id)
		}
	case OpClaim, OpRelease:
		r.applyClaim(index, c)
	case OpNotifySet, OpNotifyRemove:
		return r.applyNotify(index, c)
	case OpKV:
		return r.applyKV(index, c.KV)
	}
	r.endClaimsLocked(c)
	return refusal
}

// newer reports whether a group write at (ts, key) beats the group's
// current (have, haveKey): later event time first, then the larger value.
func newer(ts, have time.Time, key, haveKey string) bool {
	if c := ts.Compare(have); c != 0 {
		return c > 0
	}
	return key > haveKey
}

func join(parts ...string) string { return strings.Join(parts, "\x00") }

func timeKey(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

func identityKey(parent, node, agent, name string, started time.Time) string {
	return join(parent, node, agent, name, timeKey(started))
}

func endKey(ended bool, reason string) string {
	return join(strconv.FormatBool(ended), reason)
}

// notAfter returns t, or at when t lies more than MaxAhead after at (at
// truncated to the second; a zero at bounds nothing).
func notAfter(t, at time.Time) time.Time {
	if at.IsZero() {
		return t
	}
	at = at.Truncate(time.Second).UTC()
	if t.After(at.Add(MaxAhead)) {
		return at
	}
	return t
}

func (r *Registry) upsert(index uint64, at time.Time, u *Upsert) {
	rec, ok := r.records[u.SessionID]
	if !ok {
		rec = Record{
			SessionID: u.SessionID,
			TaskState: string(presence.TaskActive),
			Activity:  string(presence.ActivityUnknown),
		}
	}
	changed := !ok
	ts := notAfter(u.TS.UTC(), at)
	if p := u.Identity; p != nil {
		started := p.StartedAt
		if started.IsZero() {
			started = ts
		}
		started = notAfter(started.UTC(), at)
		key := identityKey(p.ParentSessionID, p.Node, p.Agent, p.Name, started)
		have := identityKey(rec.ParentSessionID, rec.Node, rec.Agent, rec.Name, rec.StartedAt)
		if newer(ts, rec.Clocks.Identity, key, have) {
			rec.ParentSessionID, rec.Node, rec.Agent, rec.Name = p.ParentSessionID, p.Node, p.Agent, p.Name
			rec.StartedAt, rec.Clocks.Identity, changed = started, ts, true
		}
	}
	if p := u.Task; p != nil && newer(ts, rec.Clocks.Task, p.Text, rec.Task) {
		rec.Task, rec.Clocks.Task, changed = p.Text, ts, true
	}
	if p := u.Lifecycle; p != nil &&
		newer(ts, rec.Clocks.Lifecycle, join(p.TaskState, p.Reason), join(rec.TaskState, rec.LifecycleReason)) {
		rec.TaskState, rec.LifecycleReason, rec.BlockerReason = p.TaskState, p.Reason, ""
		if p.TaskState == string(presence.TaskBlocked) {
			rec.BlockerReason = p.Reason
		}
		rec.Clocks.Lifecycle, changed = ts, true
	}
	if p := u.Activity; p != nil && newer(ts, rec.Clocks.Activity, p.Activity, rec.Activity) {
		rec.Activity, rec.ActivityAt, rec.Clocks.Activity, changed = p.Activity, ts, ts, true
	}
	if p := u.End; p != nil && newer(ts, rec.Clocks.End, endKey(p.Ended, p.Reason), endKey(rec.Ended, rec.EndReason)) {
		rec.Ended, rec.EndReason, rec.EndedAt = p.Ended, p.Reason, time.Time{}
		if p.Ended {
			rec.EndedAt = ts
		}
		rec.Clocks.End, changed = ts, true
	}
	if changed {
		rec.Index = index
		rec.UpdatedAt = rec.Clocks.latest()
		r.track(r.records[u.SessionID], ok, rec)
		r.records[u.SessionID] = rec
	}
}

// Get returns a copy of one record.
func (r *Registry) Get(id string) (Record, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rec, ok := r.records[id]
	return rec, ok
}

// List returns a copy of every record, sorted by session id.
func (r *Registry) List() []Record {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.listLocked()
}

// Records returns every record in no particular order: List without the
// sort, for readers that order the records themselves.
func (r *Registry) Records() []Record {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Record, 0, len(r.records))
	for _, rec := range r.records {
		out = append(out, rec)
	}
	return out
}

func (r *Registry) listLocked() []Record {
	out := make([]Record, 0, len(r.records))
	for _, id := range slices.Sorted(maps.Keys(r.records)) {
		out = append(out, r.records[id])
	}
	return out
}

// Len returns the number of records.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.records)
}

// Index returns the index of the last applied log entry.
func (r *Registry) Index() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.index
}

// SnapshotVersion is the first byte of a registry snapshot.
const SnapshotVersion byte = 1

type snapshotBody struct {
	Index   uint64   `json:"index"`
	Records []Record `json:"records"`
	Claims  []Claim  `json:"claims,omitempty"`
	notifySnapshot
	KV []KVEntry `json:"kv,omitempty"`
}

// Snapshot returns the registry as bytes: the version byte and the JSON of
// the applied index and the records in session-id order. Equal registries
// give equal bytes.
func (r *Registry) Snapshot() ([]byte, error) {
	b, _, err := r.SnapshotAt()
	return b, err
}

// SnapshotAt is Snapshot and the index it reflects, without the
// key-value entries under the prefixes hide.
func (r *Registry) SnapshotAt(hide ...string) ([]byte, uint64, error) {
	r.mu.RLock()
	body := snapshotBody{Index: r.index, Records: r.listLocked(), Claims: r.claimsLocked(false), notifySnapshot: r.notifyLocked(), KV: r.kvListLocked()}
	r.mu.RUnlock()
	if len(hide) > 0 {
		kv := body.KV[:0:0]
		for _, e := range body.KV {
			if !hasPrefix(e.Key, hide) {
				kv = append(kv, e)
			}
		}
		body.KV = kv
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, 0, fmt.Errorf("encode registry snapshot: %w", err)
	}
	return append([]byte{SnapshotVersion}, b...), body.Index, nil
}

// Restore replaces the registry's content with a snapshot's.
func (r *Registry) Restore(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty registry snapshot", ErrUnsupportedVersion)
	}
	if b[0] != SnapshotVersion {
		return fmt.Errorf("%w: snapshot version %d, this build reads %d", ErrUnsupportedVersion, b[0], SnapshotVersion)
	}
	var body snapshotBody
	if err := json.Unmarshal(b[1:], &body); err != nil {
		return fmt.Errorf("decode registry snapshot: %w", err)
	}
	records := make(map[string]Record, len(body.Records))
	for _, rec := range body.Records {
		records[rec.SessionID] = rec
	}
	kv := make(map[string]KVEntry, len(body.KV))
	for _, e := range body.KV {
		kv[e.Key] = e
	}
	r.mu.Lock()
	r.records, r.kv, r.index, r.claims, r.notify = records, kv, body.Index, restoreClaims(body.Claims), restoreNotify(body.notifySnapshot)
	r.kvIndex = body.Index // a restore may change anything
	r.recount()
	r.mu.Unlock()
	return nil
}
