package node

import (
	"context"
	"fmt"
	"time"

	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

// openClaims builds the claims room on the registry (or, without the
// mesh, on a table of this node's own).
func (n *Node) openClaims() error {
	mode, err := claims.ParseMode(n.cfg.Claims)
	if err != nil {
		return fmt.Errorf("%w: --claims: %w", ErrConfig, err)
	}
	cfg := claims.Config{Mode: mode, Node: n.cfg.Name, Describe: claimDescriber{n},
		Clock: n.cfg.Clock, Rows: claimRows{n}, Journal: n.ledger,
		OnJournalError: func(err error) {
			n.addDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(n.cfg.Clock.Now()), Source: "claims",
				Error: "claims: a pending claim's record in the ledger was not written (" + err.Error() + "); it is retried until the node stops, not after a restart"})
		}}
	if n.cl != nil {
		cfg.Table, cfg.Writer = n.cl.Registry(), claimWriter{n.cl}
	} else {
		l := claims.NewLocal()
		cfg.Table, cfg.Writer = l, l
	}
	d := claims.New(cfg)
	if k, err := d.Restore(); err != nil {
		n.log.Warn("claims: the pending claims were not rebuilt", "err", err)
	} else if k > 0 {
		n.log.Info("claims: pending claims rebuilt from the ledger; retrying", "claims", k)
	}
	n.claims.Store(d)
	return nil
}

// claimWriter writes claim commands through the leader and waits until
// this node's replica reflects them.
type claimWriter struct{ c *cluster.Cluster }

func (w claimWriter) Write(ctx context.Context, cmd raftstore.Command) error {
	idx, err := w.c.Apply(ctx, cmd)
	if err != nil {
		return err
	}
	return w.c.Registry().WaitForApplied(ctx, idx)
}

// claimRows tells a session's row what became of its claims: it ingests
// claim.pending, claim.write or claim.release with the hook's paths.
type claimRows struct{ n *Node }

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
	n := r.n
	st, err := n.resolveLocal(session)
	if err != nil || st.Ended {
		return // not this node's session, or over: its claims end with it
	}
	if len(abs) > presence.MaxPathsPerClaim {
		abs = abs[:presence.MaxPathsPerClaim]
	}
	ts := n.cfg.Clock.Now()
	if !ts.After(st.LastEventAt) {
		ts = st.LastEventAt.Add(time.Millisecond)
	}
	ev := presence.Event{SessionID: st.SessionID, ParentSessionID: st.ParentSessionID, Type: typ, TS: ts,
		Agent: st.Agent, Attrs: map[string]any{presence.AttrPaths: abs}}
	if _, err := n.Ingest([]presence.Event{ev}); err != nil {
		n.log.Warn("claims: the row was not told", "session", st.SessionID, "event", typ, "err", err)
	}
}

// claimDescriber names a claim's holder from this node's sessions, else
// from the registry, and says whether its node is reachable.
type claimDescriber struct{ n *Node }

func (d claimDescriber) Describe(session, node string) claims.Holder {
	n := d.n
	if st, err := n.resolveLocal(session); err == nil {
		return claims.Holder{Name: st.Name, Agent: st.Agent, Task: st.Task, Node: n.cfg.Name, Ended: st.Ended}
	}
	h := claims.Holder{Node: node}
	if n.cl != nil {
		if rec, ok := n.cl.Registry().Get(session); ok {
			h.Name, h.Agent, h.Task, h.Ended = rec.Name, rec.Agent, rec.Task, rec.Ended
			if rec.Node != "" {
				h.Node = rec.Node
			}
		}
		if h.Node != "" && h.Node != n.cfg.Name {
			m, ok := n.reachability()[h.Node]
			h.Unreachable = !reachable(m, ok)
		}
	}
	return h
}
