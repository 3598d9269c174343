package sessions

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/harn-dev/harn/presence"
)

// Candidate is a session a handle may name.
type Candidate struct {
	ID, Name string
	Ended    bool
}

// PickHandle returns the id of the one candidate that handle names: its
// full id; else its name, case-insensitive, with or without the leading
// "Agent " (a live session is preferred over ended ones of that name);
// else a unique prefix of its id. An ambiguous handle is an ErrAmbiguous
// that lists the candidates.
func PickHandle(handle string, cands []Candidate) (string, error) {
	if handle == "" {
		return "", fmt.Errorf("%w: empty id", ErrUnknownSession)
	}
	name := strings.TrimSpace(handle)
	if len(name) > len("agent ") && strings.EqualFold(name[:len("agent ")], "agent ") {
		name = strings.TrimSpace(name[len("agent "):])
	}
	var byName, byNameLive, byPrefix []string
	for _, c := range cands {
		if c.ID == handle {
			return c.ID, nil
		}
		if c.Name != "" && strings.EqualFold(c.Name, name) {
			byName = append(byName, c.ID)
			if !c.Ended {
				byNameLive = append(byNameLive, c.ID)
			}
		}
		if strings.HasPrefix(c.ID, handle) {
			byPrefix = append(byPrefix, c.ID)
		}
	}
	for _, found := range [][]string{byNameLive, byName, byPrefix} {
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], nil
		}
		sort.Strings(found)
		if len(found) > 4 {
			found = append(found[:4:4], "…")
		}
		return "", fmt.Errorf("%w: %q matches %v; give more of the id", ErrAmbiguous, handle, found)
	}
	return "", fmt.Errorf("%w %q; see `harn agents list --all`", ErrUnknownSession, handle)
}

// Resolve finds one of this node's sessions by its id, a unique prefix of
// its id, or its name (with or without "Agent ", any case).
func (s *Store) Resolve(handle string) (presence.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.sessions[handle]; ok {
		return e.state, nil
	}
	cands := make([]Candidate, 0, len(s.sessions))
	for id, e := range s.sessions {
		cands = append(cands, Candidate{ID: id, Name: e.state.Name, Ended: e.state.Ended})
	}
	id, err := PickHandle(handle, cands)
	if err != nil {
		return presence.State{}, err
	}
	return s.sessions[id].state, nil
}

// Lock resolves handle, takes its session's mutation lock (operator
// mutations of one session are serialized) and returns the session's
// state as it is under the lock, and the lock's release.
func (s *Store) Lock(handle string) (presence.State, func(), error) {
	st, err := s.Resolve(handle)
	if err != nil {
		return st, nil, err
	}
	unlock := s.mutLocks.lock(st.SessionID)
	if st, err = s.Resolve(st.SessionID); err != nil {
		unlock()
		return st, nil, err
	}
	return st, unlock, nil
}

// sessionLocks serializes operator mutations per session.
type sessionLocks struct {
	mu    sync.Mutex
	locks map[string]*sessionLock
}

type sessionLock struct {
	mu   sync.Mutex
	refs int
}

// lock takes session id's lock and returns its release.
func (l *sessionLocks) lock(id string) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sessionLock{}
	}
	sl := l.locks[id]
	if sl == nil {
		sl = &sessionLock{}
		l.locks[id] = sl
	}
	sl.refs++
	l.mu.Unlock()
	sl.mu.Lock()
	return func() {
		sl.mu.Unlock()
		l.mu.Lock()
		if sl.refs--; sl.refs == 0 {
			delete(l.locks, id)
		}
		l.mu.Unlock()
	}
}
