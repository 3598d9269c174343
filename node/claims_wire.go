package node

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/claims"
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
	cfg := claims.Config{Mode: mode, Node: n.cfg.Name, Describe: claimDescriber{n}, Now: n.cfg.Clock.Now}
	if n.cl != nil {
		cfg.Table, cfg.Writer = n.cl.store, claimWriter{n.cl}
	} else {
		l := claims.NewLocal()
		cfg.Table, cfg.Writer = l, l
	}
	n.claims.Store(claims.New(cfg))
	return nil
}

// claimWriter writes claim commands through the leader and waits until
// this node's replica reflects them.
type claimWriter struct{ c *cluster }

func (w claimWriter) Write(ctx context.Context, cmd raftstore.Command) error {
	idx, err := w.c.applyCommand(ctx, cmd)
	if err != nil {
		return err
	}
	return w.c.store.WaitForApplied(ctx, idx)
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
		if rec, ok := n.cl.store.Get(session); ok {
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

// claimQuery is what the claims room reads of a Decide query: the hook
// adds the writes' repositories and paths beside the task runtime's
// fields.
type claimQuery struct {
	Claims []claims.Request `json:"claims,omitempty"`
}

// decideClaims answers the claim part of a Decide query; ok is false when
// there is nothing to decide.
func (n *Node) decideClaims(ctx context.Context, query []byte) (*api.DecideResponse, bool) {
	d := n.claims.Load()
	if d == nil {
		return nil, false
	}
	var q claimQuery
	if json.Unmarshal(query, &q) != nil || len(q.Claims) == 0 {
		return nil, false
	}
	var warn *api.DecideResponse
	for i, r := range q.Claims {
		if i == 8 {
			break // a write touches a few repositories at most
		}
		v := d.Decide(ctx, r)
		if v.Diagnostic != "" {
			n.addDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(n.cfg.Clock.Now()), Source: "claims", Error: v.Diagnostic})
		}
		switch v.Decision {
		case claims.DecideDeny:
			return &api.DecideResponse{Decision: v.Decision, Reason: v.Reason}, true
		case claims.DecideWarn:
			if warn == nil {
				warn = &api.DecideResponse{Decision: v.Decision, Reason: v.Reason}
			}
		}
	}
	return warn, warn != nil
}
