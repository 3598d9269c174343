package sessions

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/harn-dev/harn/node/clockguard"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/ids"
)

// Ingest errors.
var (
	ErrUnknownSession = errors.New("node: unknown session")
	ErrAmbiguous      = errors.New("node: session handle is ambiguous")
)

// Span names of ingest: the whole ingest, and its two steps, the durable
// append and the fold into the live states.
const (
	SpanIngest = "harn.ingest"
	SpanAppend = "harn.ledger.append"
	SpanFold   = "harn.fold"
)

// Ingest validates evs, gives new sessions a name, stores the events
// durably (idempotent by id) and folds them into the live states; then it
// tells the subscribers. It returns after the events are in a synced WAL.
func (s *Store) Ingest(ctx context.Context, evs []presence.Event) (res ledger.AppendResult, err error) {
	ctx, sp := s.startSpan(ctx, evs)
	defer func() { endSpan(sp, err) }()
	now := s.cfg.Clock.Now()
	for i := range evs {
		e := &evs[i]
		if e.ID == "" {
			e.ID = ids.New(now)
		}
		e.Node = s.cfg.Node
		e.Seq = 0
		if err := e.Validate(); err != nil {
			return ledger.AppendResult{}, fmt.Errorf("event %d: %w", i, err)
		}
	}
	clamped := clockguard.Guard(evs, now) // untrusted time: see node/clockguard
	named := s.nameNewSessions(evs)
	_, asp := s.tracer.Start(ctx, SpanAppend)
	res, err = s.cfg.Ledger.Append(evs)
	endSpan(asp, err)
	if err != nil {
		s.unreserve(named)
		return res, err
	}
	_, fsp := s.tracer.Start(ctx, SpanFold)
	changed := s.apply(res.Stored)
	fsp.End()
	s.unreserve(named) // the names are in the states now
	s.notify(Batch{Start: now, Stored: res.Stored, Changed: changed, Clamped: clamped})
	return res, nil
}

// nameNewSessions stamps a session_name on the first event of each session
// that has no name yet, unique among live sessions, and reserves it until
// the events are folded.
func (s *Store) nameNewSessions(evs []presence.Event) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var named []string
	var taken map[string]bool // the live names, copied once per call
	for i := range evs {
		e := &evs[i]
		if ent, ok := s.sessions[e.SessionID]; ok && ent.state.Name != "" {
			continue
		}
		if _, ok := s.reserved[e.SessionID]; ok {
			continue
		}
		if taken == nil {
			taken = s.takenLocked()
		}
		name := pickName(e.SessionID, taken)
		taken[name] = true
		e.SetAttr(presence.AttrSessionName, name)
		s.reserved[e.SessionID] = name
		s.liveNames[name] = e.SessionID
		named = append(named, e.SessionID)
	}
	return named
}

func (s *Store) takenLocked() map[string]bool {
	t := make(map[string]bool, len(s.liveNames))
	for k := range s.liveNames {
		t[k] = true
	}
	return t
}

// unreserve drops the reservations of sessions: folded, their names are
// in their states (and liveNames); not stored, the names are free again.
func (s *Store) unreserve(sessions []string) {
	if len(sessions) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range sessions {
		name, ok := s.reserved[id]
		if !ok {
			continue
		}
		delete(s.reserved, id)
		if _, held := s.sessions[id]; !held && s.liveNames[name] == id {
			delete(s.liveNames, name)
		}
	}
}

// apply folds stored events into the live states and returns the changed
// ones. An event that sorts before the session's last folded event makes
// the Store fold that session again from the ledger, so that an older
// event arriving later never rolls the state backward.
func (s *Store) apply(stored []presence.Event) []Change {
	if len(stored) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := map[string]bool{}
	for i := range stored {
		e := &stored[i]
		ent := s.sessions[e.SessionID]
		if ent == nil {
			ent = &entry{state: presence.NewState(e.SessionID)}
			if presence.InOrder(&ent.state, e) {
				ent.state = presence.Step(ent.state, e)
			}
			if ent.state.Name == "" {
				// The session's first stored event is not the one its
				// name was stamped on (that one is still on its way).
				ent.state.Name = s.reserved[e.SessionID]
			}
			s.sessions[e.SessionID] = ent
		} else if presence.InOrder(&ent.state, e) {
			ent.state = presence.Step(ent.state, e)
		} else {
			evs, err := s.cfg.Ledger.Session(e.SessionID)
			if err != nil {
				s.log.Error("refold session", "session", e.SessionID, "err", err)
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
	out := make([]Change, 0, len(keys))
	for _, id := range keys {
		ent := s.sessions[id]
		ent.view = View{}
		ent.hash = presence.PresenceHash(&ent.state)
		ent.gen++
		// The gossip publisher decides whether a delta is due: by the
		// hash, and by the evidence time and seen name it leaves out.
		out = append(out, Change{State: ent.state, Hash: ent.hash, Gen: ent.gen})
		if ent.state.Ended {
			if s.liveNames[ent.state.Name] == id {
				delete(s.liveNames, ent.state.Name)
			}
		} else if ent.state.Name != "" {
			if _, taken := s.liveNames[ent.state.Name]; !taken {
				s.liveNames[ent.state.Name] = id
			}
		}
	}
	return out
}

// startSpan opens the span of one ingest under ctx's span (the gRPC
// call's, when tracing is on). The attributes are counts and the one
// session's id, agent and event type; never attribute values.
func (s *Store) startSpan(ctx context.Context, evs []presence.Event) (context.Context, trace.Span) {
	ctx, sp := s.tracer.Start(ctx, SpanIngest)
	if !sp.IsRecording() {
		return ctx, sp
	}
	sp.SetAttributes(attribute.Int("harn.events", len(evs)))
	if len(evs) > 0 {
		sp.SetAttributes(attribute.String("harn.session_id", evs[0].SessionID),
			attribute.String("harn.agent", evs[0].Agent), attribute.String("harn.event_type", evs[0].Type))
	}
	return ctx, sp
}

// endSpan ends sp, marking it failed when err is set.
func endSpan(sp trace.Span, err error) {
	if err != nil {
		sp.RecordError(err)
		sp.SetStatus(codes.Error, err.Error())
	}
	sp.End()
}
