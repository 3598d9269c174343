package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
)

// SessionSpace is the keyspace of the harn sessions this node opened: per
// session (key: its id) the options it was opened with (never the
// provider key), its directory and the grants it was given, so that a
// session that ended (harn ask ends its own) or that the node's restart
// cut short opens again as it was (harn ask --session, the TUI).
const SessionSpace = "harnsession"

// maxSessionRecord bounds a stored session record read back.
const maxSessionRecord = 256 << 10

// sessionRecordVersion is the schema of a stored session record.
const sessionRecordVersion = 1

// sessionRecord is a harn session as stored.
type sessionRecord struct {
	V       int             `json:"v"`
	Options HarnOptions     `json:"options"` // Key always empty
	Workdir string          `json:"workdir"`
	Grants  []runtime.Grant `json:"grants"`
	Created time.Time       `json:"created"`
}

// storeSession records a harn session once its first task fixed its
// grants. A failed write is logged: the session runs, and only its reopen
// is lost.
func (h *Host) storeSession(hs *hosted) {
	if hs == nil || hs.ag == nil || hs.child {
		return
	}
	g, err := h.rt.SessionGrants(hs.id)
	if err != nil || g == nil {
		return
	}
	o := hs.opts
	o.Key, o.Fork = "", ""
	b, err := json.Marshal(sessionRecord{V: sessionRecordVersion, Options: o, Workdir: hs.workdir, Grants: g, Created: h.cfg.Clock.Now().UTC()})
	if err == nil {
		err = h.cfg.KV.PutKV(SessionSpace, []byte(hs.id), b)
	}
	if err != nil {
		h.log.Warn("harn session not recorded: it will not reopen", "session", hs.id, "err", err)
	}
}

// loadSession reads a stored harn session record.
func (h *Host) loadSession(id string) (sessionRecord, bool, error) {
	var rec sessionRecord
	found := false
	err := h.cfg.KV.ScanKV(SessionSpace, []byte(id), func(k, v []byte) error {
		if string(k) != id || found {
			return nil
		}
		if len(v) > maxSessionRecord {
			return fmt.Errorf("tasks: session record of %s is %d bytes", id, len(v))
		}
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("tasks: session record of %s: %w", id, err)
		}
		found = true
		return nil
	})
	if err != nil {
		return rec, false, err
	}
	if found && rec.V != sessionRecordVersion {
		return rec, false, fmt.Errorf("tasks: session record of %s has version %d", id, rec.V)
	}
	return rec, found, nil
}

// reopening is a harn session opened again: its id and what it was given.
type reopening struct {
	id     string
	grants []runtime.Grant
	prev   *hosted   // this run's ended hosting of it, or nil (a restart)
	after  time.Time // its last event: the start that reopens it folds after its end
}

// ErrEnded is an action on a harn session that has ended and that this
// action does not reopen.
var ErrEnded = errors.New("tasks: the session has ended")

// reopenable finds an ended harn session of this node that an action with
// HarnOptions may open again: its id (resolved) and its hosting this run
// (nil after a restart). ok is false when handle names no such session.
func (h *Host) reopenable(handle string) (id string, prev *hosted, ok bool) {
	if hs := h.lookup(handle); hs != nil {
		h.mu.Lock()
		ended := hs.ended
		h.mu.Unlock()
		return hs.id, hs, ended && hs.ag != nil && !hs.child
	}
	var st presence.State
	var err error
	if h.cfg.Sessions == nil {
		err = ErrNoSession
	} else {
		st, err = h.cfg.Sessions.Resolve(handle)
	}
	if err != nil {
		// not in the node's sessions: a session of this node's store,
		// named by its exact id
		_, found, lerr := h.loadSession(handle)
		return handle, nil, lerr == nil && found
	}
	if st.Agent != Agent {
		return "", nil, false
	}
	if hs := h.lookup(st.SessionID); hs != nil {
		h.mu.Lock()
		ended := hs.ended
		h.mu.Unlock()
		return hs.id, hs, ended && hs.ag != nil && !hs.child
	}
	return st.SessionID, nil, st.Ended || !h.Hosts(st.SessionID)
}

// reopenIfEnded opens handle's harn session again when it has ended and
// its record is stored (found), with the caller's key (the stored options
// are the session's). Its context, history, grants and unknown-outcome
// holds are as it left them. found is false for a live session, another
// agent's, or one never recorded: the caller goes on as before.
func (h *Host) reopenIfEnded(handle, key string, grants []runtime.Grant) (hs *hosted, found bool, err error) {
	id, prev, ok := h.reopenable(handle)
	if !ok {
		return nil, false, nil
	}
	h.reopenMu.Lock() // one reopen of a session at a time
	defer h.reopenMu.Unlock()
	if cur := h.lookup(id); cur != nil && cur != prev {
		return nil, false, nil // another caller reopened it meanwhile
	}
	rec, found, err := h.loadSession(id)
	if err != nil || !found {
		return nil, found, err
	}
	if grants != nil {
		// refused before it opens: a task wider than the session never
		// reopens it
		if g, ok := runtime.Within(grants, rec.Grants); !ok {
			return nil, true, &runtime.GrantsBeyondError{Session: id, Grant: g}
		}
	}
	hs, err = h.reopen(id, prev, rec, key)
	return hs, true, err
}

// reopen opens session id again from its record rec.
func (h *Host) reopen(id string, prev *hosted, rec sessionRecord, key string) (*hosted, error) {
	o := rec.Options
	o.Key = key
	re := &reopening{id: id, grants: slices.Clone(rec.Grants), prev: prev}
	if h.cfg.Sessions != nil {
		if st, err := h.cfg.Sessions.Resolve(id); err == nil {
			re.after = st.LastEventAt
		}
	}
	if _, err := h.openHarnAs(o, rec.Workdir, nil, re); err != nil {
		return nil, err
	}
	hs := h.lookup(id)
	if hs == nil {
		return nil, ErrClosed
	}
	h.log.Info("harn session reopened", "session", id)
	return hs, nil
}

// liveLocked counts the hosted sessions that have not ended (mu held).
func (h *Host) liveLocked() int {
	n := 0
	for _, hs := range h.sessions {
		if !hs.ended {
			n++
		}
	}
	return n
}

// keepEndedHosted bounds the ended harn sessions kept hosted for their
// events and history in memory; beyond it the oldest are dropped (their
// history is read back from the store, as after a restart).
const keepEndedHosted = 256

// pruneEndedLocked drops the oldest ended hostings beyond keepEndedHosted
// (mu held).
func (h *Host) pruneEndedLocked(id string) {
	h.endedOrder = append(h.endedOrder, id)
	for len(h.endedOrder) > keepEndedHosted {
		old := h.endedOrder[0]
		h.endedOrder = h.endedOrder[1:]
		if hs := h.sessions[old]; hs != nil && hs.ended && hs.ag != nil {
			delete(h.sessions, old)
		}
	}
}

// resumedState is a reopened session's history: this run's, or the one
// stored (after a restart), its cursors going on; new events are stored.
func (h *Host) resumedState(id string, prev *hosted) *harnState {
	persist := h.persistHistory(id)
	if prev != nil && prev.harn != nil {
		prev.harn.mu.Lock()
		prev.harn.persist = persist
		prev.harn.mu.Unlock()
		return prev.harn
	}
	s, err := h.storedHistory(id)
	if err != nil {
		h.log.Warn("harn session history not read back: it starts again", "session", id, "err", err)
	}
	if s == nil {
		return newHarnState(persist)
	}
	h.mu.Lock()
	delete(h.stored, id)
	h.mu.Unlock()
	s.mu.Lock()
	s.persist = persist
	s.mu.Unlock()
	return s
}

// endReopened ends a session this action reopened when the action itself
// was then refused: it was closed before, and stays so.
func (h *Host) endReopened(id string) {
	ev := presence.Event{SessionID: id, Type: presence.TypeSessionEnd, TS: h.cfg.Clock.Now(), Agent: Agent,
		Attrs: map[string]any{presence.AttrReason: "reopen_refused"}}
	if err := h.emit(ev); err != nil {
		h.log.Warn("a reopened session whose action was refused did not end", "session", id, "err", err)
	}
	h.Observe([]presence.Event{ev})
}
