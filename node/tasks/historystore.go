package tasks

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/harn-dev/harn/runtime/agent"
)

// HistorySpace is the keyspace of harn sessions' histories (what the
// history op answers, the TUI's screen), so that a session's screen
// comes back after the node restarts. Per session it is a ring of
// keepHistory slots: key <session>\x00<cursor mod keepHistory, 2 bytes
// BE>, value {n: cursor, e: event}. Writes are not synced: a kill -9
// loses at most the last events the ledger had not flushed.
const HistorySpace = "harnhistory"

// keepStoredHistories bounds the stored histories read back in memory
// (sessions this run does not host, e.g. after a restart).
const keepStoredHistories = 64

// storedEvent is one event of a session's history as stored.
type storedEvent struct {
	N int         `json:"n"`
	E agent.Event `json:"e"`
}

func historyPrefix(session string) []byte { return append([]byte(session), 0) }

func historyKey(session string, n int) []byte {
	return binary.BigEndian.AppendUint16(historyPrefix(session), uint16(n%keepHistory))
}

// persistHistory is a session's history writer: harnState calls it with
// each event and its cursor, in cursor order (under its lock). A failed
// write is logged once per session: the history is a view, never worth
// refusing the loop's event.
func (h *Host) persistHistory(session string) func(n int, e agent.Event) {
	warned := false
	return func(n int, e agent.Event) {
		b, err := json.Marshal(storedEvent{N: n, E: e})
		if err == nil {
			err = h.cfg.KV.PutKV(HistorySpace, historyKey(session, n), b)
		}
		if err != nil && !warned {
			warned = true
			h.log.Warn("harn session history not stored", "session", session, "err", err)
		}
	}
}

// storedHistory is the history of a session this run does not host, read
// back from HistorySpace (nil when none is stored): the ring's newest
// contiguous run of cursors, as the session left it.
func (h *Host) storedHistory(session string) (*harnState, error) {
	h.mu.Lock()
	s := h.stored[session]
	h.mu.Unlock()
	if s != nil {
		return s, nil
	}
	p := historyPrefix(session)
	var evs []storedEvent
	bad := 0
	err := h.cfg.KV.ScanKV(HistorySpace, p, func(k, v []byte) error {
		if len(k) != len(p)+2 {
			return nil
		}
		var se storedEvent
		if json.Unmarshal(v, &se) != nil || se.N < 0 {
			bad++
			return nil
		}
		evs = append(evs, se)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tasks: read the history of %s: %w", session, err)
	}
	if bad > 0 {
		h.log.Warn("harn session history: unreadable events skipped", "session", session, "events", bad)
	}
	if len(evs) == 0 {
		return nil, nil
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].N < evs[j].N })
	start := 0
	for i := 1; i < len(evs); i++ {
		if evs[i].N != evs[i-1].N+1 {
			start = i // a gap (a lost write): the cursors after it are contiguous
		}
	}
	s = newHarnState(nil)
	s.session.base = evs[start].N
	for _, se := range evs[start:] {
		s.session.add(se.E)
	}
	h.mu.Lock()
	if len(h.stored) >= keepStoredHistories {
		clear(h.stored)
	}
	h.stored[session] = s
	h.mu.Unlock()
	return s, nil
}
