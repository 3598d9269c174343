package node

import (
	"errors"

	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/remint"
	"github.com/harn-dev/harn/presence"
)

// TranscriptReader tells whether an agent's transcript shows a name
// (remint.Reader does).
type TranscriptReader interface {
	Shows(path, name string) (bool, error)
}

// stateOf copies a session's live state.
func (n *Node) stateOf(id string) (presence.State, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.sessions[id]
	if !ok || e.state.Events == 0 {
		return presence.State{}, false
	}
	return e.state, true
}

// observeNames looks, for each session of stored whose events name a
// transcript and whose re-minted name is pending, whether the agent has
// shown that name there, and records session_name.seen when it has.
func (n *Node) observeNames(stored []presence.Event) {
	var paths map[string]string // session -> latest transcript path
	for i := range stored {
		if p := stored[i].AttrString(presence.AttrTranscriptPath); p != "" {
			if paths == nil {
				paths = map[string]string{}
			}
			paths[stored[i].SessionID] = p
		}
	}
	for id, path := range paths {
		st, ok := n.stateOf(id)
		if !ok || !st.NamePending() {
			continue
		}
		name := st.SuggestedSessionName
		seen, err := n.shown.Shows(path, name)
		if err != nil {
			lvl := n.log.Debug
			if errors.Is(err, remint.ErrTimeout) {
				lvl = n.log.Warn
			}
			lvl("transcript", "session", id, "err", err)
			continue
		}
		if !seen {
			continue
		}
		ev := presence.Event{SessionID: id, ParentSessionID: st.ParentSessionID, Type: presence.TypeSessionNameSeen,
			TS: n.cfg.Clock.Now(), Agent: st.Agent, Attrs: map[string]any{presence.AttrName: name}}
		if _, err := n.Ingest([]presence.Event{ev}); err != nil {
			n.log.Warn("session name seen", "session", id, "err", err)
		}
	}
}

// nameAskedKey is the ledger meta key that remembers, per session, the
// re-minted name its agent was last asked (at a stop) to show.
func nameAskedKey(session string) string { return "name-asked/" + session }

// PendingName is session's re-minted name when the agent has not shown it
// and has not been asked for it yet; asking marks it asked (durably, in
// the ledger's meta, so that a restart does not ask again). "" otherwise:
// an agent is asked once per re-mint.
func (n *Node) PendingName(session string) string {
	st, ok := n.stateOf(session)
	if !ok || !st.NamePending() {
		return ""
	}
	key := nameAskedKey(session)
	prev, err := n.ledger.GetMeta(key)
	if err != nil {
		n.log.Warn("pending name", "session", session, "err", err)
		return ""
	}
	if string(prev) == st.SuggestedSessionName {
		return ""
	}
	if err := n.ledger.PutMeta(key, []byte(st.SuggestedSessionName)); err != nil && !errors.Is(err, ledger.ErrUnwritable) {
		// Not remembered: asking again at the next stop is better than
		// looping, and stop_hook_active prevents a loop anyway.
		n.log.Warn("pending name", "session", session, "err", err)
	}
	return st.SuggestedSessionName
}

var _ TranscriptReader = (*remint.Reader)(nil)
