package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter/all"
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
			m, ok := n.roster.Reachability()[h.Node]
			h.Unreachable = !roster.Reachable(m, ok)
		}
	}
	return h
}

// decideClaims answers the claim part of a Decide query; ok is false when
// there is nothing to decide.
func (n *Node) decideClaims(ctx context.Context, cr []claims.Request, call claims.CallRef) (*api.DecideResponse, bool) {
	d := n.claims.Load()
	if d == nil || len(cr) == 0 {
		return nil, false
	}
	var warn *api.DecideResponse
	for i, r := range cr {
		if i == 8 {
			break // a write touches a few repositories at most
		}
		r.Call = call
		v := d.Decide(ctx, r)
		if v.Diagnostic != "" {
			n.addDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(n.cfg.Clock.Now()), Source: "claims", Error: v.Diagnostic})
		}
		switch v.Decision {
		case claims.DecideDeny:
			d.Refused(r)
			// What the call took in the repositories before this one.
			if err := d.ReleaseTaken(ctx, r.Session, call); err != nil {
				n.log.Warn("claims: a refused write's other claims were not released", "session", r.Session, "err", err)
			}
			return &api.DecideResponse{Decision: v.Decision, Reason: v.Reason}, true
		case claims.DecideWarn:
			if warn == nil {
				warn = &api.DecideResponse{Decision: v.Decision, Reason: v.Reason}
			}
		}
	}
	return warn, warn != nil
}

// claimsRefused tells the rows of a write the task runtime refused that its
// claims were never taken.
func (n *Node) claimsRefused(cr []claims.Request) {
	d := n.claims.Load()
	if d == nil {
		return
	}
	for i, r := range cr {
		if i == 8 {
			break
		}
		d.Refused(r)
	}
}

// callRef names a hook query's tool call for the claims room.
func callRef(q tasks.Query) claims.CallRef {
	return claims.CallRef{ID: q.Call, Tool: q.Tool, Digest: claims.CallDigest(q.Tool, q.Input)}
}

// approvalCallRef names the call of an approval request: its request key
// is "call:<tool_use_id>" when the agent named the call.
func approvalCallRef(req *api.ApprovalRequest) claims.CallRef {
	id, _ := strings.CutPrefix(req.RequestKey, "call:")
	if id == req.RequestKey {
		id = ""
	}
	return claims.CallRef{ID: id, Tool: req.Tool, Digest: claims.CallDigest(req.Tool, req.Input)}
}

// releaseDeniedClaims releases what the session's call took: the
// operator denied that write, so its PostToolUse never comes.
func (n *Node) releaseDeniedClaims(ctx context.Context, session string, call claims.CallRef) {
	d := n.claims.Load()
	if d == nil || session == "" {
		return
	}
	if err := d.ReleaseTaken(ctx, session, call); err != nil {
		n.addDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(n.cfg.Clock.Now()), Source: "claims",
			Error: "claims: the claim of a denied write was not released: " + err.Error() + "; run `harn agents release-claim --session " + session + " --all`"})
	}
}

// observeClaimCalls tells the claims room of the turn and session ends
// among stored events: a write call announced in a turn that ended
// without the call's end did not run (it was denied in the agent's own
// prompt), and releases what it took.
func (n *Node) observeClaimCalls(ctx context.Context, evs []presence.Event) {
	d := n.claims.Load()
	if d == nil {
		return
	}
	for i := range evs {
		e := &evs[i]
		switch e.Type {
		case presence.TypeTurnStop, presence.TypeUserPromptSubmit:
			if err := d.TurnEnded(ctx, e.SessionID, e.TS, all.ReportsCallEnds(e.Agent)); err != nil {
				n.addDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(n.cfg.Clock.Now()), Source: "claims",
					Error: "claims: the claim of a write that did not run was not released: " + err.Error() + "; run `harn agents release-claim --session " + e.SessionID + "`"})
			}
		case presence.TypeSessionEnd:
			d.SessionEnded(e.SessionID)
		}
	}
}
