package upkeep

import (
	"context"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// Diagnostics is the ledger's part HookLocal reads and clears.
type Diagnostics interface {
	Diagnostics(limit int) ([]ledger.Diagnostic, error)
	ClearDiagnostics() (int, error)
}

// HookLocal is the room's part of the local server (api.LocalServer):
// the hook's Append and Diagnose, and the diagnostics `harn node errors`
// reads.
type HookLocal struct {
	Keeper *Keeper
	Ledger Diagnostics
	Clock  clock.Clock
	// Tie ties the events of a hosted session to its host
	// (node/hosted); Ingest records them (node/sessions).
	Tie    func(evs []presence.Event) error
	Ingest func(ctx context.Context, evs []presence.Event) (ledger.AppendResult, error)
	// PeerContext is the peers' context for a session (node/roster).
	PeerContext func(session string) string
	// Settle reads the transcripts a session's events named; then
	// PendingName is its re-minted name when the agent has not shown it
	// and has not been asked for it yet (node/sessions).
	Settle      func(session string)
	PendingName func(session string) string
	// DecideInAppend is the decision on a tool call (node/tasksvc).
	DecideInAppend func(ctx context.Context, q *api.DecideQuery) *api.DecideResponse
	// ErrStatus maps the node's errors to the RPC's status.
	ErrStatus func(error) error
}

// Append is the hook's RPC. It runs four steps, each with one job: ingest
// the events, then answer what the hook asked beside them (the peers'
// context for a session, a session's pending name, the decision on a tool
// call). A step the request does not ask for leaves its field empty.
func (s *HookLocal) Append(ctx context.Context, req *api.AppendRequest) (*api.AppendResponse, error) {
	out, err := s.appendIngest(ctx, req.Events)
	if err != nil {
		return nil, err
	}
	if req.ContextFor != "" {
		out.AdditionalContext = s.PeerContext(req.ContextFor)
	}
	if req.NameFor != "" {
		s.Settle(req.NameFor)
		out.PendingName = s.PendingName(req.NameFor)
	}
	if req.Decide != nil {
		out.Decision = s.DecideInAppend(ctx, req.Decide)
	}
	return out, nil
}

// appendIngest decodes the hook's events and ingests them: the reply
// names their ids and how many were duplicates. A refusal is the RPC's
// status error.
func (s *HookLocal) appendIngest(ctx context.Context, in []*api.Event) (*api.AppendResponse, error) {
	evs := make([]presence.Event, 0, len(in))
	for _, e := range in {
		ev, err := wire.EventFromAPI(e)
		if err != nil {
			return nil, s.ErrStatus(err)
		}
		evs = append(evs, ev)
	}
	if err := s.Tie(evs); err != nil {
		return nil, s.ErrStatus(err)
	}
	res, err := s.Ingest(ctx, evs)
	if err != nil {
		return nil, s.ErrStatus(err)
	}
	out := &api.AppendResponse{Duplicates: int32(res.Duplicates)}
	for i := range evs {
		out.Ids = append(out.Ids, evs[i].ID)
	}
	return out, nil
}

// Diagnose records a hook's failure as a diagnostic.
func (s *HookLocal) Diagnose(ctx context.Context, req *api.DiagnoseRequest) (*api.DiagnoseResponse, error) {
	ts := time.Unix(0, req.TsUnixNano)
	if req.TsUnixNano == 0 {
		ts = s.Clock.Now()
	}
	src := req.Agent
	if src == "" {
		src = "hook"
	}
	s.Keeper.AddDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(ts), Source: "hook " + src,
		Error: req.Error, InputBytes: int(req.InputBytes), InputDigest: req.InputDigest})
	return &api.DiagnoseResponse{}, nil
}

// Errors is the ledger's diagnostics, newest first, cleared on request.
func (s *HookLocal) Errors(ctx context.Context, req *api.ErrorsRequest) (*api.ErrorsResponse, error) {
	ds, err := s.Ledger.Diagnostics(int(req.Limit))
	if err != nil {
		return nil, s.ErrStatus(err)
	}
	if req.Clear {
		if _, err := s.Ledger.ClearDiagnostics(); err != nil {
			return nil, s.ErrStatus(err)
		}
	}
	out := &api.ErrorsResponse{}
	for _, d := range ds {
		out.Diagnostics = append(out.Diagnostics, wire.DiagnosticToAPI(d))
	}
	return out, nil
}
