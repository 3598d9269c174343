package coordsvc

import (
	"context"
	"fmt"
	"time"

	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

// OpenClaims builds the claims room on the registry (or, without the
// mesh, on a table of this node's own).
func (s *Service) OpenClaims() (*claims.Decider, error) {
	mode, err := claims.ParseMode(s.Mode)
	if err != nil {
		return nil, fmt.Errorf("%w: --claims: %w", layout.ErrConfig, err)
	}
	cfg := claims.Config{Mode: mode, Node: s.Node, Describe: claimDescriber{s},
		Clock: s.Clock, Rows: claimRows{s}, Journal: s.Journal,
		OnJournalError: func(err error) {
			s.Diagnose(ledger.Diagnostic{TS: presence.FormatTime(s.Clock.Now()), Source: "claims",
				Error: "claims: a pending claim's record in the ledger was not written (" + err.Error() + "); it is retried until the node stops, not after a restart"})
		}}
	if m := s.Mesh(); m != nil {
		cfg.Table, cfg.Writer = m.Registry(), claimWriter{m}
	} else {
		l := claims.NewLocal()
		cfg.Table, cfg.Writer = l, l
	}
	d := claims.New(cfg)
	if k, err := d.Restore(); err != nil {
		s.Log.Warn("claims: the pending claims were not rebuilt", "err", err)
	} else if k > 0 {
		s.Log.Info("claims: pending claims rebuilt from the ledger; retrying", "claims", k)
	}
	return d, nil
}

// claimWriter writes claim commands through the leader and waits until
// this node's replica reflects them.
type claimWriter struct{ c Mesh }

func (w claimWriter) Write(ctx context.Context, cmd raftstore.Command) error {
	idx, err := w.c.Apply(ctx, cmd)
	if err != nil {
		return err
	}
	return w.c.Registry().WaitForApplied(ctx, idx)
}

// claimRows tells a session's row what became of its claims: it ingests
// claim.pending, claim.write or claim.release with the hook's paths.
type claimRows struct{ s *Service }

func (r claimRows) ClaimPending(session string, abs []string) {
	r.record(session, presence.TypeClaimPending, abs)
}
func (r claimRows) ClaimLanded(session string, abs []string) {
	r.record(session, presence.TypeClaimWrite, abs)
}
func (r claimRows) ClaimDropped(session string, abs []string) {
	r.record(session, presence.TypeClaimRelease, abs)
}

func (r claimRows) record(session, typ string, abs []string) {
	s := r.s
	st, err := s.Sessions.Resolve(session)
	if err != nil || st.Ended {
		return // not this node's session, or over: its claims end with it
	}
	if len(abs) > presence.MaxPathsPerClaim {
		abs = abs[:presence.MaxPathsPerClaim]
	}
	ts := s.Clock.Now()
	if !ts.After(st.LastEventAt) {
		ts = st.LastEventAt.Add(time.Millisecond)
	}
	ev := presence.Event{SessionID: st.SessionID, ParentSessionID: st.ParentSessionID, Type: typ, TS: ts,
		Agent: st.Agent, Attrs: map[string]any{presence.AttrPaths: abs}}
	if err := s.Ingest([]presence.Event{ev}); err != nil {
		s.Log.Warn("claims: the row was not told", "session", st.SessionID, "event", typ, "err", err)
	}
}

// claimDescriber names a claim's holder from this node's sessions, else
// from the registry, and says whether its node is reachable.
type claimDescriber struct{ s *Service }

func (d claimDescriber) Describe(session, node string) claims.Holder {
	s := d.s
	if st, err := s.Sessions.Resolve(session); err == nil {
		return claims.Holder{Name: st.Name, Agent: st.Agent, Task: st.Task, Node: s.Node, Ended: st.Ended}
	}
	h := claims.Holder{Node: node}
	if m := s.Mesh(); m != nil {
		if rec, ok := m.Registry().Get(session); ok {
			h.Name, h.Agent, h.Task, h.Ended = rec.Name, rec.Agent, rec.Task, rec.Ended
			if rec.Node != "" {
				h.Node = rec.Node
			}
		}
		if h.Node != "" && h.Node != s.Node {
			up, ok := s.Members()[h.Node]
			h.Unreachable = !(ok && up)
		}
	}
	return h
}
