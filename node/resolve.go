package node

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/harn-dev/harn/presence"
)

// candidate is a session a handle may name.
type candidate struct {
	id, name string
	ended    bool
}

// pickHandle returns the id of the one candidate that handle names: its
// full id; else its name, case-insensitive, with or without the leading
// "Agent " (a live session is preferred over ended ones of that name);
// else a unique prefix of its id. An ambiguous handle is an ErrAmbiguous
// that lists the candidates.
func pickHandle(handle string, cands []candidate) (string, error) {
	if handle == "" {
		return "", fmt.Errorf("%w: empty id", ErrUnknownSession)
	}
	name := strings.TrimSpace(handle)
	if len(name) > len("agent ") && strings.EqualFold(name[:len("agent ")], "agent ") {
		name = strings.TrimSpace(name[len("agent "):])
	}
	var byName, byNameLive, byPrefix []string
	for _, c := range cands {
		if c.id == handle {
			return c.id, nil
		}
		if c.name != "" && strings.EqualFold(c.name, name) {
			byName = append(byName, c.id)
			if !c.ended {
				byNameLive = append(byNameLive, c.id)
			}
		}
		if strings.HasPrefix(c.id, handle) {
			byPrefix = append(byPrefix, c.id)
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

// resolveLocal finds one of this node's sessions by handle (pickHandle).
func (n *Node) resolveLocal(handle string) (presence.State, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e, ok := n.sessions[handle]; ok && e.state.Events > 0 {
		return e.state, nil
	}
	cands := make([]candidate, 0, len(n.sessions))
	for id, e := range n.sessions {
		if e.state.Events > 0 {
			cands = append(cands, candidate{id: id, name: e.state.Name, ended: e.state.Ended})
		}
	}
	id, err := pickHandle(handle, cands)
	if err != nil {
		return presence.State{}, err
	}
	return n.sessions[id].state, nil
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

// lockSession resolves handle, takes its session's mutation lock and
// returns the session's state as it is under the lock.
func (n *Node) lockSession(handle string) (presence.State, func(), error) {
	st, err := n.resolveLocal(handle)
	if err != nil {
		return st, nil, err
	}
	unlock := n.mutLocks.lock(st.SessionID)
	if st, err = n.resolveLocal(st.SessionID); err != nil {
		unlock()
		return st, nil, err
	}
	return st, unlock, nil
}
