package raftstore

import (
	"cmp"
	"fmt"
	"github.com/harn-dev/harn/raftstore/raftwire"
	"maps"
	"slices"
	"strings"
	"time"
)

// Claim commands: write claims on (repository, path), first come first
// served in log order.
const (
	// OpClaim gives the session every path of the command, or none: when
	// any of them is held by another live session, the command changes
	// nothing (the claimant reads the outcome from its replica).
	OpClaim Op = "claim"
	// OpRelease drops the session's claims on the paths named, or all of
	// them.
	OpRelease Op = "release"
)

// Limits of claims.
const (
	MaxClaimPaths   = 256  // paths in one claim or release
	MaxClaimPathLen = 4096 // bytes of one path or repository identity
)

// ClaimCommand is the body of OpClaim and OpRelease.
type ClaimCommand struct {
	SessionID string `json:"session_id"`
	// Node is the session's node (where the holder can be asked).
	Node string `json:"node,omitempty"`
	// Repo is the repository's identity; Paths are relative to its top
	// level, slash-separated.
	Repo  string   `json:"repo,omitempty"`
	Paths []string `json:"paths,omitempty"`
	// All (release only) drops every claim of the session.
	All bool `json:"all,omitempty"`
	// TS is when the claim was made (informational; order is the log's).
	TS time.Time `json:"ts,omitzero"`
}

// ClaimCmd returns the command that claims paths of repo for a session.
func ClaimCmd(session, node, repo string, ts time.Time, paths ...string) Command {
	return Command{Op: OpClaim, Claim: &ClaimCommand{SessionID: session, Node: node, Repo: repo, Paths: paths, TS: ts}}
}

// ReleaseCmd returns the command that drops a session's claims on paths of
// repo, or all of them when all is set.
func ReleaseCmd(session, repo string, all bool, paths ...string) Command {
	return Command{Op: OpRelease, Claim: &ClaimCommand{SessionID: session, Repo: repo, Paths: paths, All: all}}
}

// validateClaim checks OpClaim and OpRelease.
func (c Command) validateClaim() error {
	p := c.Claim
	if p == nil || len(c.Upserts) != 0 || len(c.SessionIDs) != 0 {
		return invalid("claim", "a claim or release carries a claim body and no upserts or session_ids")
	}
	if err := checkID("claim.session_id", p.SessionID); err != nil {
		return err
	}
	if err := checkText("claim.node", p.Node, 255); err != nil {
		return err
	}
	if err := checkTime("claim.ts", p.TS, false); err != nil {
		return err
	}
	if c.Op == OpRelease && p.All {
		if len(p.Paths) != 0 || p.Repo != "" {
			return invalid("claim.all", "a release of all claims names no repo or paths")
		}
		return nil
	}
	if p.All {
		return invalid("claim.all", "only a release can drop all claims")
	}
	if p.Repo == "" || len(p.Repo) > MaxClaimPathLen {
		return invalid("claim.repo", fmt.Sprintf("required, at most %d bytes", MaxClaimPathLen))
	}
	if err := checkText("claim.repo", p.Repo, MaxClaimPathLen); err != nil {
		return err
	}
	if len(p.Paths) == 0 || len(p.Paths) > MaxClaimPaths {
		return invalid("claim.paths", fmt.Sprintf("name 1 to %d paths", MaxClaimPaths))
	}
	for _, path := range p.Paths {
		if path == "" || len(path) > MaxClaimPathLen || strings.ContainsRune(path, 0) {
			return invalid("claim.paths", fmt.Sprintf("a path is empty, holds a NUL or is longer than %d bytes", MaxClaimPathLen))
		}
		if err := checkText("claim.paths", path, MaxClaimPathLen); err != nil {
			return err
		}
	}
	return nil
}

// Claim is one held write claim (raftwire.Claim).
type Claim = raftwire.Claim

type claimKey struct{ repo, path string }

// claimTable is the registry's claims: by (repo, path), and the keys of
// each session.
type claimTable struct {
	byKey     map[claimKey]Claim
	bySession map[string]map[claimKey]struct{}
}

func newClaimTable() claimTable {
	return claimTable{byKey: map[claimKey]Claim{}, bySession: map[string]map[claimKey]struct{}{}}
}

func (t *claimTable) put(c Claim) {
	k := claimKey{c.Repo, c.Path}
	if old, ok := t.byKey[k]; ok {
		t.drop(old.SessionID, k)
	}
	t.byKey[k] = c
	m := t.bySession[c.SessionID]
	if m == nil {
		m = map[claimKey]struct{}{}
		t.bySession[c.SessionID] = m
	}
	m[k] = struct{}{}
}

func (t *claimTable) drop(session string, k claimKey) {
	if c, ok := t.byKey[k]; ok && c.SessionID == session {
		delete(t.byKey, k)
	}
	if m := t.bySession[session]; m != nil {
		delete(m, k)
		if len(m) == 0 {
			delete(t.bySession, session)
		}
	}
}

func (t *claimTable) dropSession(session string) {
	for k := range t.bySession[session] {
		delete(t.byKey, k)
	}
	delete(t.bySession, session)
}

// liveLocked reports whether session holds its claims: its record is
// absent (the claim arrived before the record) or not ended. Caller holds
// r.mu.
func (r *Registry) liveLocked(session string) bool {
	rec, ok := r.records[session]
	return !ok || !rec.Ended
}

// applyClaim applies OpClaim or OpRelease. Caller holds r.mu for writing.
func (r *Registry) applyClaim(index uint64, c Command) {
	p := c.Claim
	if c.Op == OpRelease {
		if p.All {
			r.claims.dropSession(p.SessionID)
			return
		}
		for _, path := range p.Paths {
			r.claims.drop(p.SessionID, claimKey{p.Repo, path})
		}
		return
	}
	for _, path := range p.Paths {
		cur, ok := r.claims.byKey[claimKey{p.Repo, path}]
		if ok && cur.SessionID != p.SessionID && r.liveLocked(cur.SessionID) {
			return // held by another live session: the whole claim loses
		}
	}
	for _, path := range p.Paths {
		k := claimKey{p.Repo, path}
		if cur, ok := r.claims.byKey[k]; ok && cur.SessionID == p.SessionID {
			continue // already this session's: the first claim's index stays
		}
		r.claims.put(Claim{Repo: p.Repo, Path: path, SessionID: p.SessionID, Node: p.Node, TS: p.TS.UTC(), Index: index})
	}
}

// endClaimsLocked drops the claims of sessions an upsert ended or a delete
// removed. Caller holds r.mu for writing.
func (r *Registry) endClaimsLocked(c Command) {
	switch c.Op {
	case OpDelete:
		for _, id := range c.SessionIDs {
			r.claims.dropSession(id)
		}
	case OpUpsert, OpBatch:
		for i := range c.Upserts {
			rec, ok := r.records[c.Upserts[i].SessionID]
			if !ok {
				continue
			}
			if rec.Ended {
				r.claims.dropSession(rec.SessionID)
				continue
			}
			if c.Upserts[i].Identity != nil && rec.Node != "" {
				r.dropForeignClaimsLocked(rec)
			}
		}
	}
}

// dropForeignClaimsLocked drops the claims made in a session's name by
// another node than the one its record names (a claim that reached the
// registry before the session's record, from a node that does not own
// it). Caller holds r.mu for writing.
func (r *Registry) dropForeignClaimsLocked(rec Record) {
	for k := range r.claims.bySession[rec.SessionID] {
		if c := r.claims.byKey[k]; c.Node != "" && c.Node != rec.Node {
			r.claims.drop(rec.SessionID, k)
		}
	}
}

// ClaimOf returns the live claim on (repo, path), if any.
func (r *Registry) ClaimOf(repo, path string) (Claim, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.claims.byKey[claimKey{repo, path}]
	if !ok || !r.liveLocked(c.SessionID) {
		return Claim{}, false
	}
	return c, true
}

// ClaimsOf returns a session's claims, sorted by repo and path.
func (r *Registry) ClaimsOf(session string) []Claim {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Claim, 0, len(r.claims.bySession[session]))
	for k := range r.claims.bySession[session] {
		out = append(out, r.claims.byKey[k])
	}
	sortClaims(out)
	return out
}

// Claims returns every live claim, sorted by repo and path.
func (r *Registry) Claims() []Claim {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.claimsLocked(true)
}

func (r *Registry) claimsLocked(liveOnly bool) []Claim {
	out := make([]Claim, 0, len(r.claims.byKey))
	for _, c := range r.claims.byKey {
		if !liveOnly || r.liveLocked(c.SessionID) {
			out = append(out, c)
		}
	}
	sortClaims(out)
	return out
}

func sortClaims(cs []Claim) {
	slices.SortFunc(cs, func(a, b Claim) int {
		return cmp.Or(cmp.Compare(a.Repo, b.Repo), cmp.Compare(a.Path, b.Path))
	})
}

// restoreClaims rebuilds the table from a snapshot's claims.
func restoreClaims(cs []Claim) claimTable {
	t := newClaimTable()
	for _, c := range cs {
		t.put(c)
	}
	return t
}

// ClaimOf reads the local replica (possibly stale).
func (s *Store) ClaimOf(repo, path string) (Claim, bool) { return s.reg.ClaimOf(repo, path) }

// ClaimsOf reads a session's claims from the local replica.
func (s *Store) ClaimsOf(session string) []Claim { return s.reg.ClaimsOf(session) }

// Claims reads every live claim from the local replica.
func (s *Store) Claims() []Claim { return s.reg.Claims() }

// claimSessions lists the sessions holding claims (tests).
func (r *Registry) claimSessions() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.claims.bySession))
}
