package node

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/harn-dev/harn/node/clockguard"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/ids"
)

// Ingest errors.
var (
	ErrUnknownSession = errors.New("node: unknown session")
	ErrAmbiguous      = errors.New("node: session handle is ambiguous")
)

// Ingest validates evs, gives new sessions a name, stores the events
// durably (idempotent by id) and folds them into the live states. It
// returns after the events are in a synced WAL.
func (n *Node) Ingest(evs []presence.Event) (ledger.AppendResult, error) {
	return n.IngestContext(context.Background(), evs)
}

// IngestContext is Ingest traced under ctx's span (otel.go).
func (n *Node) IngestContext(ctx context.Context, evs []presence.Event) (res ledger.AppendResult, err error) {
	ctx, sp := n.startIngestSpan(ctx, evs)
	defer func() { endSpan(sp, err) }()
	now := n.cfg.Clock.Now()
	for i := range evs {
		e := &evs[i]
		if e.ID == "" {
			e.ID = ids.New(now)
		}
		e.Node = n.cfg.Name
		e.Seq = 0
		if err := e.Validate(); err != nil {
			return ledger.AppendResult{}, fmt.Errorf("event %d: %w", i, err)
		}
	}
	clamped := clockguard.Guard(evs, now) // untrusted time: see node/clockguard
	named := n.nameNewSessions(evs)
	_, asp := n.tracer.Start(ctx, spanAppend)
	res, err = n.ledger.Append(evs)
	endSpan(asp, err)
	if err != nil {
		n.unname(named)
		return res, err
	}
	_, fsp := n.tracer.Start(ctx, spanFold)
	n.apply(res.Stored)
	n.observeTasks(res.Stored)
	fsp.End()
	n.observeClaimCalls(ctx, res.Stored)

	n.noteClamped(clamped, res.Stored)
	n.observeNames(res.Stored)
	for i := range res.Stored {
		n.metrics.Ingested(res.Stored[i].Agent, res.Stored[i].Type)
	}
	n.metrics.ObserveIngest(n.cfg.Clock.Now().Sub(now))
	return res, nil
}

// nameNewSessions stamps a session_name on the first event of each session
// the node has not seen, unique among live sessions.
func (n *Node) nameNewSessions(evs []presence.Event) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var named []string
	var taken map[string]bool // the live names, copied once per call
	for i := range evs {
		e := &evs[i]
		if ent, ok := n.sessions[e.SessionID]; ok && ent.state.Name != "" {
			continue
		}
		if contains(named, e.SessionID) {
			continue
		}
		if taken == nil {
			taken = n.takenLocked()
		}
		name := pickName(e.SessionID, taken)
		taken[name] = true
		e.SetAttr(presence.AttrSessionName, name)
		ent := n.sessions[e.SessionID]
		if ent == nil {
			ent = &entry{state: presence.NewState(e.SessionID)}
			ent.state.Events = 0
			n.sessions[e.SessionID] = ent
		}
		ent.state.Name = name
		n.liveNames[name] = e.SessionID
		named = append(named, e.SessionID)
	}
	return named
}

func (n *Node) takenLocked() map[string]bool {
	t := make(map[string]bool, len(n.liveNames))
	for k := range n.liveNames {
		t[k] = true
	}
	return t
}

// unname undoes the names given to sessions whose first events were not
// stored.
func (n *Node) unname(sessions []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range sessions {
		ent := n.sessions[s]
		if ent == nil || ent.state.Events > 0 {
			continue
		}
		delete(n.liveNames, ent.state.Name)
		delete(n.sessions, s)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// apply folds stored events into the live states. An event that sorts
// before the session's last folded event makes the node fold that session
// again from the ledger, so that an older event arriving later never rolls
// the state backward.
func (n *Node) apply(stored []presence.Event) {
	if len(stored) == 0 {
		return
	}
	n.mu.Lock()
	changed := map[string]bool{}
	for i := range stored {
		e := &stored[i]
		ent := n.sessions[e.SessionID]
		if ent == nil {
			ent = &entry{state: presence.NewState(e.SessionID)}
			n.sessions[e.SessionID] = ent
		}
		if ent.state.Events == 0 {
			// A placeholder made by naming: fold from scratch.
			name := ent.state.Name
			ent.state = presence.NewState(e.SessionID)
			if presence.InOrder(&ent.state, e) {
				ent.state = presence.Step(ent.state, e)
			}
			if ent.state.Name == "" {
				ent.state.Name = name
			}
		} else if presence.InOrder(&ent.state, e) {
			ent.state = presence.Step(ent.state, e)
		} else {
			evs, err := n.ledger.Session(e.SessionID)
			if err != nil {
				n.log.Error("refold session", "session", e.SessionID, "err", err)
				continue
			}
			ent.state = presence.Fold(evs)
		}
		changed[e.SessionID] = true
	}
	keys := make([]string, 0, len(changed))
	for k := range changed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var publish []published
	for _, s := range keys {
		ent := n.sessions[s]
		ent.hash = presence.PresenceHash(&ent.state)
		// The gossip publisher decides whether a delta is due: by the
		// hash, and by the evidence time and seen name it leaves out.
		publish = append(publish, published{state: ent.state, hash: ent.hash, changed: true})
		if ent.state.Ended {
			if n.liveNames[ent.state.Name] == s {
				delete(n.liveNames, ent.state.Name)
			}
		} else if ent.state.Name != "" {
			if _, taken := n.liveNames[ent.state.Name]; !taken {
				n.liveNames[ent.state.Name] = s
			}
		}
		if n.proj != nil {
			n.proj.Mark(ent.state)
		}
	}
	n.mu.Unlock()
	if n.cl != nil {
		for _, p := range publish {
			n.cl.publish(p)
		}
	}
	n.alerts.Changed()
}

// published is a session state change to tell the mesh about.
type published struct {
	state   presence.State
	hash    string
	changed bool
}

// liveSnapshot copies the states of live sessions.
func (n *Node) liveSnapshot() []presence.State {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]presence.State, 0, len(n.sessions))
	for _, e := range n.sessions {
		if e.state.Events > 0 && !e.state.Ended {
			out = append(out, e.state)
		}
	}
	return out
}

// Sessions copies the states of all sessions (all) or the live ones,
// sorted by start time then id.
func (n *Node) Sessions(all bool) []presence.State {
	n.mu.Lock()
	states := make([]presence.State, 0, len(n.sessions))
	for _, e := range n.sessions {
		if e.state.Events == 0 || (!all && e.state.Ended) {
			continue
		}
		states = append(states, e.state)
	}
	n.mu.Unlock()
	// Sort by index: a State is large, and moving it costs more than
	// comparing it (the alerts room reads every session each second).
	idx := make([]int32, len(states))
	for i := range idx {
		idx[i] = int32(i)
	}
	sort.Slice(idx, func(i, j int) bool {
		a, b := &states[idx[i]], &states[idx[j]]
		if !a.StartedAt.Equal(b.StartedAt) {
			return a.StartedAt.Before(b.StartedAt)
		}
		return a.SessionID < b.SessionID
	})
	out := make([]presence.State, len(states))
	for i, k := range idx {
		out[i] = states[k]
	}
	return out
}

// Resolve finds one of this node's sessions by its id, a unique prefix of
// its id, or its name (with or without "Agent ", any case).
func (n *Node) Resolve(handle string) (presence.State, error) { return n.resolveLocal(handle) }

// liveEntries are the gossiped entries of this node's live sessions.
func (n *Node) liveEntries() []gossip.Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []gossip.Entry
	for _, e := range n.sessions {
		if e.state.Events > 0 && !e.state.Ended {
			ge := gossip.EntryOf(&e.state, e.hash)
			n.decorateEntry(&ge)
			out = append(out, ge)
		}
	}
	return out
}

// localDigest is the presence digest of this node's live sessions.
func (n *Node) localDigest() string {
	n.mu.Lock()
	pairs := make([][2]string, 0, len(n.sessions))
	for id, e := range n.sessions {
		if e.state.Events > 0 && !e.state.Ended {
			pairs = append(pairs, [2]string{id, gossip.WithTask(e.hash, n.harnTask(id))})
		}
	}
	n.mu.Unlock()
	return gossip.Digest(pairs)
}
