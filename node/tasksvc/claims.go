package tasksvc

import (
	"context"
	"strings"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// decideClaims answers the claim part of a Decide query; ok is false when
// there is nothing to decide.
func (s *Service) decideClaims(ctx context.Context, cr []claims.Request, call claims.CallRef) (*api.DecideResponse, bool) {
	d := s.Claims()
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
			s.Diagnose(ledger.Diagnostic{TS: presence.FormatTime(s.Clock.Now()), Source: "claims", Error: v.Diagnostic})
		}
		switch v.Decision {
		case claims.DecideDeny:
			d.Refused(r)
			// What the call took in the repositories before this one.
			if err := d.ReleaseTaken(ctx, r.Session, call); err != nil {
				s.Log.Warn("claims: a refused write's other claims were not released", "session", r.Session, "err", err)
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
func (s *Service) claimsRefused(cr []claims.Request) {
	d := s.Claims()
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
func (s *Service) releaseDeniedClaims(ctx context.Context, session string, call claims.CallRef) {
	d := s.Claims()
	if d == nil || session == "" {
		return
	}
	if err := d.ReleaseTaken(ctx, session, call); err != nil {
		s.Diagnose(ledger.Diagnostic{TS: presence.FormatTime(s.Clock.Now()), Source: "claims",
			Error: "claims: the claim of a denied write was not released: " + err.Error() + "; run `harn agents release-claim --session " + session + " --all`"})
	}
}

// ObserveClaimCalls tells the claims room of the turn and session ends
// among stored events: a write call announced in a turn that ended
// without the call's end did not run (it was denied in the agent's own
// prompt), and releases what it took.
func (s *Service) ObserveClaimCalls(ctx context.Context, evs []presence.Event) {
	if s == nil {
		return
	}
	d := s.Claims()
	if d == nil {
		return
	}
	for i := range evs {
		e := &evs[i]
		switch e.Type {
		case presence.TypeTurnStop, presence.TypeUserPromptSubmit:
			if err := d.TurnEnded(ctx, e.SessionID, e.TS, all.ReportsCallEnds(e.Agent)); err != nil {
				s.Diagnose(ledger.Diagnostic{TS: presence.FormatTime(s.Clock.Now()), Source: "claims",
					Error: "claims: the claim of a write that did not run was not released: " + err.Error() + "; run `harn agents release-claim --session " + e.SessionID + "`"})
			}
		case presence.TypeSessionEnd:
			d.SessionEnded(e.SessionID)
		}
	}
}
