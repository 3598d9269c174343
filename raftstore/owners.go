package raftstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Who holds a session id, and how many live sessions a node may hold.
//
// A session id belongs to the first node that wrote it (the identity
// group's node): an upsert whose identity names another node is refused
// for that session, with every other upsert of the same session in the
// command, by every replica alike. And a node holds at most the mesh's
// session quota of live (not ended) sessions: an upsert that would create
// one more is refused the same way. Both rules read only the registry's
// own state (the quota is a key of its key-value space, which the leader
// writes from its --session-quota), so every replica decides alike.

// Admission errors.
var (
	// ErrSessionTaken: another node already holds the session id.
	ErrSessionTaken = errors.New("raftstore: the session id belongs to another node")
	// ErrSessionQuota: the node already holds the mesh's quota of live
	// sessions.
	ErrSessionQuota = errors.New("raftstore: the node is at the mesh's session quota")
)

// SessionQuotaKey is the key-value key holding the mesh's session quota
// (decimal). Without it, DefaultSessionQuota holds.
const SessionQuotaKey = "registry/session_quota"

// DefaultSessionQuota is the live sessions one node may hold in the
// registry when the mesh sets no other quota.
const DefaultSessionQuota = 5000

// SessionTakenError refuses a write of a session id that another node holds.
type SessionTakenError struct {
	SessionID string
	Owner     string // the node that holds the id
	Writer    string // the node whose write was refused
}

func (e *SessionTakenError) Error() string {
	return fmt.Sprintf("%v: session %q is held in the registry by node %q, so node %q may not write it "+
		"(session ids are unique per owner: the first node to write one holds it; if %q should not, remove it with harn mesh remove)",
		ErrSessionTaken, clip(e.SessionID), clip(e.Owner), clip(e.Writer), clip(e.Owner))
}

func (e *SessionTakenError) Unwrap() error { return ErrSessionTaken }

// RefusedSessions names the refused session.
func (e *SessionTakenError) RefusedSessions() []string { return []string{e.SessionID} }

// SessionQuotaError refuses new sessions of a node at its quota.
type SessionQuotaError struct {
	Node       string
	Quota      int
	SessionIDs []string
}

func (e *SessionQuotaError) Error() string {
	ids := make([]string, 0, 3)
	for i, id := range e.SessionIDs {
		if i == 3 {
			ids = append(ids, "…")
			break
		}
		ids = append(ids, strconv.Quote(clip(id)))
	}
	return fmt.Sprintf("%v: node %q already has %d live sessions in the registry, the mesh's session quota; "+
		"%d new session(s) refused (%s); end sessions, or raise --session-quota on the servers",
		ErrSessionQuota, clip(e.Node), e.Quota, len(e.SessionIDs), strings.Join(ids, ", "))
}

func (e *SessionQuotaError) Unwrap() error { return ErrSessionQuota }

// RefusedSessions names the refused sessions.
func (e *SessionQuotaError) RefusedSessions() []string { return e.SessionIDs }

// SessionRefusal is a registry refusal that names the sessions it left
// out of a write: *SessionTakenError, *SessionQuotaError, or a forwarded
// write's copy of the leader's refusal.
type SessionRefusal interface {
	error
	RefusedSessions() []string
}

// RefusedSessions maps each session that a SessionRefusal in err's tree
// (errors.Join and %w included) names to that refusal; nil when none.
func RefusedSessions(err error) map[string]error {
	var out map[string]error
	var walk func(error)
	walk = func(e error) {
		switch x := e.(type) {
		case nil:
		case SessionRefusal:
			for _, id := range x.RefusedSessions() {
				if out == nil {
					out = map[string]error{}
				}
				out[id] = x
			}
		case interface{ Unwrap() []error }:
			for _, u := range x.Unwrap() {
				walk(u)
			}
		case interface{ Unwrap() error }:
			walk(x.Unwrap())
		}
	}
	walk(err)
	return out
}

// clip keeps untrusted text in an error short.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// ParseSessionQuota reads a quota value as the registry keeps it: a
// positive decimal.
func ParseSessionQuota(b []byte) (int, bool) {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// quotaLocked is the mesh's session quota. Caller holds r.mu.
func (r *Registry) quotaLocked() int {
	if e, ok := r.kv[SessionQuotaKey]; ok {
		if n, ok := ParseSessionQuota(e.Value); ok {
			return n
		}
	}
	return DefaultSessionQuota
}

// countsLive reports whether rec counts against its node's quota.
func countsLive(rec Record) bool { return rec.Node != "" && !rec.Ended }

// track keeps the live counts per node as a record changes from old
// (present when hadOld) to cur. Caller holds r.mu for writing.
func (r *Registry) track(old Record, hadOld bool, cur Record) {
	if hadOld && countsLive(old) {
		if r.live[old.Node]--; r.live[old.Node] <= 0 {
			delete(r.live, old.Node)
		}
	}
	if countsLive(cur) {
		r.live[cur.Node]++
	}
}

// untrack drops a removed record from the live counts.
func (r *Registry) untrack(old Record) {
	if countsLive(old) {
		if r.live[old.Node]--; r.live[old.Node] <= 0 {
			delete(r.live, old.Node)
		}
	}
}

func (r *Registry) recount() {
	r.live = map[string]int{}
	for _, rec := range r.records {
		if countsLive(rec) {
			r.live[rec.Node]++
		}
	}
}

// claimant is a session and the node a command names as its owner.
type claimant struct{ session, node string }

// admitLocked decides, in order, which claimants may write: nil for
// those that may, an error for the others. Caller holds r.mu.
func (r *Registry) admitLocked(cs []claimant) map[string]error {
	quota := r.quotaLocked()
	added := map[string]int{}
	out := map[string]error{}
	for _, c := range cs {
		if _, done := out[c.session]; done {
			continue
		}
		rec, ok := r.records[c.session]
		if ok && rec.Node != "" {
			if rec.Node != c.node {
				out[c.session] = &SessionTakenError{SessionID: c.session, Owner: rec.Node, Writer: c.node}
			} else {
				out[c.session] = nil
			}
			continue
		}
		if c.node == "" {
			out[c.session] = nil
			continue
		}
		if r.live[c.node]+added[c.node] >= quota {
			out[c.session] = &SessionQuotaError{Node: c.node, Quota: quota, SessionIDs: []string{c.session}}
			continue
		}
		added[c.node]++
		out[c.session] = nil
	}
	return out
}

// admitUpserts applies the admission rules to a command's upserts: the
// sessions refused, and the error that says why (nil when none is).
// Caller holds r.mu.
func (r *Registry) admitUpserts(ups []Upsert) (map[string]bool, error) {
	var cs []claimant
	for i := range ups {
		if p := ups[i].Identity; p != nil {
			cs = append(cs, claimant{ups[i].SessionID, p.Node})
		}
	}
	if len(cs) == 0 {
		return nil, nil
	}
	verdicts := r.admitLocked(cs)
	var refused map[string]bool
	var errs []error
	quota := map[string]*SessionQuotaError{}
	for _, c := range cs {
		err := verdicts[c.session]
		if err == nil || refused[c.session] {
			continue
		}
		if refused == nil {
			refused = map[string]bool{}
		}
		refused[c.session] = true
		var qe *SessionQuotaError
		if errors.As(err, &qe) {
			if have, ok := quota[qe.Node]; ok {
				have.SessionIDs = append(have.SessionIDs, c.session)
				continue
			}
			quota[qe.Node] = qe
		}
		errs = append(errs, err)
	}
	return refused, errors.Join(errs...)
}

// Admit tells, for each session id that node is about to write, whether
// the registry would take it: nil, a *SessionTakenError or a
// *SessionQuotaError. It reads the replica as it is now; the leader's log
// order decides in the end.
func (r *Registry) Admit(node string, ids []string) map[string]error {
	cs := make([]claimant, len(ids))
	for i, id := range ids {
		cs[i] = claimant{id, node}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.admitLocked(cs)
}

// SessionQuota is the mesh's session quota as this replica knows it.
func (r *Registry) SessionQuota() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.quotaLocked()
}

// LiveSessions counts the live sessions node holds in the registry.
func (r *Registry) LiveSessions(node string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.live[node]
}

// Admit reads the local replica (see Registry.Admit).
func (s *Store) Admit(node string, ids []string) map[string]error { return s.reg.Admit(node, ids) }

// SessionQuota reads the local replica's session quota.
func (s *Store) SessionQuota() int { return s.reg.SessionQuota() }

// LiveSessions reads the local replica's count of node's live sessions.
func (s *Store) LiveSessions(node string) int { return s.reg.LiveSessions(node) }
