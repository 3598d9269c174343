package claims

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// Journal keeps the pending claims across a restart: the node's ledger
// (node/ledger's PutKVSync, DeleteKVSync and ScanKV). Each write is
// synced, so that a kill -9 right after a write was allowed loses neither
// its pending claim nor the end of one.
type Journal interface {
	PutKVSync(space string, key, val []byte) error
	DeleteKVSync(space string, key []byte) error
	ScanKV(space string, prefix []byte, fn func(key, val []byte) error) error
}

// JournalSpace is the ledger keyspace of the pending claims.
const JournalSpace = "claims.pending"

// journalRecord is one pending claim as the journal keeps it.
type journalRecord struct {
	Session string            `json:"session"`
	Repo    string            `json:"repo"`
	Paths   []string          `json:"paths"`
	Abs     map[string]string `json:"abs,omitempty"`
}

func journalKey(id uint64) []byte { return []byte(fmt.Sprintf("%020d", id)) }

// persist writes pc to the journal (a failed write leaves the claim
// pending in memory only, as before a journal: the retry still runs).
func (d *Decider) persist(pc pendingClaim) {
	if d.cfg.Journal == nil {
		return
	}
	b, err := json.Marshal(journalRecord{Session: pc.session, Repo: pc.repo, Paths: pc.paths, Abs: pc.abs})
	if err == nil {
		err = d.cfg.Journal.PutKVSync(JournalSpace, journalKey(pc.id), b)
	}
	if err != nil && d.cfg.OnJournalError != nil {
		d.cfg.OnJournalError(err)
	}
}

// unpersist removes a settled or dropped pending claim from the journal.
func (d *Decider) unpersist(id uint64) {
	if d.cfg.Journal == nil {
		return
	}
	if err := d.cfg.Journal.DeleteKVSync(JournalSpace, journalKey(id)); err != nil && d.cfg.OnJournalError != nil {
		d.cfg.OnJournalError(err)
	}
}

// Restore rebuilds the pending claims from the journal (at the node's
// start, before any write is decided) and starts their retry. The rows
// already show them pending: their claim.pending events are in the
// ledger. It returns how many it restored.
func (d *Decider) Restore() (int, error) {
	if d.cfg.Journal == nil {
		return 0, nil
	}
	var got []pendingClaim
	var bad []uint64
	err := d.cfg.Journal.ScanKV(JournalSpace, nil, func(k, v []byte) error {
		id, err := strconv.ParseUint(string(k), 10, 64)
		if err != nil {
			return nil // not one of ours
		}
		var r journalRecord
		if json.Unmarshal(v, &r) != nil || r.Session == "" || r.Repo == "" || len(r.Paths) == 0 {
			bad = append(bad, id)
			return nil
		}
		if r.Abs == nil {
			r.Abs = map[string]string{}
		}
		got = append(got, pendingClaim{id: id, session: r.Session, repo: r.Repo, paths: slices.Clone(r.Paths), abs: r.Abs})
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("claims: restore pending: %w", err)
	}
	for _, id := range bad {
		d.unpersist(id)
	}
	if len(got) == 0 {
		return 0, nil
	}
	d.mu.Lock()
	for _, pc := range got {
		d.nextID = max(d.nextID, pc.id)
	}
	d.pending = append(got, d.pending...)
	d.mu.Unlock()
	d.kickRetry()
	return len(got), nil
}
