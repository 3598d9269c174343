package node

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/presence"
)

// localService adapts the node to the local wire's generated server
// interface (api.LocalServer).
type localService struct {
	n *Node
}

var _ api.LocalServer = (*localServer)(nil)

// statusErr maps the node's errors to gRPC codes; the CLI maps the codes to
// exit codes: InvalidArgument (bad input), NotFound (unknown session),
// FailedPrecondition (a rule refused), Aborted (ambiguous prefix),
// ResourceExhausted (the registry has no leader), Unimplemented (no mesh).
// The ledger's refusals map as node/ledger documents them: a full disk is
// ResourceExhausted, a ledger that refuses writes otherwise (or is
// reopening, or closed) Unavailable, an append of an id still in flight
// Aborted; a hook spools its events on each.
func statusErr(err error) error {
	if err == nil {
		return nil
	}
	var c codes.Code
	switch {
	case errors.Is(err, ledger.ErrNoSpace):
		c = codes.ResourceExhausted
	case errors.Is(err, ledger.ErrUnwritable), errors.Is(err, ledger.ErrUnavailable), errors.Is(err, ledger.ErrClosed):
		c = codes.Unavailable
	case errors.Is(err, ledger.ErrInFlight):
		c = codes.Aborted
	case errors.Is(err, ErrUnknownSession):
		c = codes.NotFound
	case errors.Is(err, ErrAmbiguous):
		c = codes.Aborted
	case errors.Is(err, ErrRefused):
		c = codes.FailedPrecondition
	case errors.Is(err, ErrBadRequest), errors.Is(err, presence.ErrInvalidEvent):
		c = codes.InvalidArgument
	case errors.Is(err, ErrTrust):
		return writeRefusedStatus(err)
	case errors.Is(err, ErrNoLeader):
		c = codes.ResourceExhausted
	case errors.Is(err, ErrNoMesh):
		c = codes.Unimplemented
	default:
		c = codes.Internal
	}
	if errors.Is(err, ledger.ErrUnwritable) || errors.Is(err, ledger.ErrNoSpace) {
		// Say it in a way a client can match without reading the text:
		// ResourceExhausted also means "no leader".
		return apigrpc.WithReason(c, api.ReasonLedgerUnwritable, err.Error())
	}
	return status.Error(c, err.Error())
}

// Append is the hook's RPC. It runs four steps, each with one job: ingest
// the events, then answer what the hook asked beside them (the peers'
// context for a session, a session's pending name, the decision on a tool
// call). A step the request does not ask for leaves its field empty.
func (s *localService) Append(ctx context.Context, req *api.AppendRequest) (*api.AppendResponse, error) {
	out, err := s.appendIngest(ctx, req.Events)
	if err != nil {
		return nil, err
	}
	out.AdditionalContext = s.appendPeerContext(req.ContextFor)
	out.PendingName = s.appendPendingName(req.NameFor)
	out.Decision = s.appendDecide(ctx, req.Decide)
	return out, nil
}

// appendIngest decodes the hook's events and ingests them: the reply
// names their ids and how many were duplicates. A refusal is the RPC's
// status error.
func (s *localService) appendIngest(ctx context.Context, in []*api.Event) (*api.AppendResponse, error) {
	evs := make([]presence.Event, 0, len(in))
	for _, e := range in {
		ev, err := wire.EventFromAPI(e)
		if err != nil {
			return nil, statusErr(err)
		}
		evs = append(evs, ev)
	}
	res, err := s.n.IngestContext(ctx, evs)
	if err != nil {
		return nil, statusErr(err)
	}
	out := &api.AppendResponse{Duplicates: int32(res.Duplicates)}
	for i := range evs {
		out.Ids = append(out.Ids, evs[i].ID)
	}
	return out, nil
}

// appendPeerContext is the peers' context for session (its agent's
// additional context), or "" when the hook asks for none.
func (s *localService) appendPeerContext(session string) string {
	if session == "" {
		return ""
	}
	return s.n.roster.PeerContext(session)
}

// appendPendingName is the name waiting for session, or "" when the hook
// asks for none.
func (s *localService) appendPendingName(session string) string {
	if session == "" {
		return ""
	}
	return s.n.PendingName(session)
}

// appendDecide is the decision on the tool call q, or nil when the hook
// asks for none.
func (s *localService) appendDecide(ctx context.Context, q *api.DecideQuery) *api.DecideResponse {
	if q == nil {
		return nil
	}
	return s.n.taskSvc.DecideInAppend(ctx, q)
}

func (s *localService) Diagnose(ctx context.Context, req *api.DiagnoseRequest) (*api.DiagnoseResponse, error) {
	ts := time.Unix(0, req.TsUnixNano)
	if req.TsUnixNano == 0 {
		ts = s.n.cfg.Clock.Now()
	}
	src := req.Agent
	if src == "" {
		src = "hook"
	}
	s.n.keep.AddDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(ts), Source: "hook " + src,
		Error: req.Error, InputBytes: int(req.InputBytes), InputDigest: req.InputDigest})
	return &api.DiagnoseResponse{}, nil
}

func (s *localService) List(ctx context.Context, req *api.ListRequest) (*api.ListResponse, error) {
	// The array is sorted by urgency where it is written: the roster's
	// own order would be undone.
	entries, info, err := s.n.roster.List(ctx, req.All, req.Consistent, !req.JsonArray)
	if err != nil {
		return nil, statusErr(err)
	}
	out := &api.ListResponse{Node: s.n.cfg.Name, Read: info.API()}
	if req.JsonArray {
		out.Rows = s.n.roster.Rows(entries, time.Duration(req.SilenceAfterMs)*time.Millisecond)
		return out, nil
	}
	out.Rows = make([]*api.SessionRow, len(entries))
	for i := range entries {
		out.Rows[i] = entries[i].Row()
	}
	return out, nil
}

func (s *localService) session(st presence.State, err error) (*api.SessionResponse, error) {
	if err != nil {
		return nil, statusErr(err)
	}
	row := api.RowOf(&st)
	row.Reachable, row.Source, row.HarnTask = true, "local", s.n.taskSvc.Brief(st.SessionID)
	return &api.SessionResponse{Session: row, Live: !st.Ended}, nil
}

func (s *localService) Get(ctx context.Context, req *api.SessionRequest) (*api.SessionResponse, error) {
	e, note, err := s.n.roster.ReadSession(ctx, req.Id)
	if err != nil {
		return nil, statusErr(err)
	}
	return &api.SessionResponse{Session: e.Row(), Live: !e.GetEnded(), Note: note}, nil
}

func (s *localService) Trace(ctx context.Context, req *api.SessionRequest) (*api.TraceResponse, error) {
	e, evs, note, err := s.n.roster.ReadTrace(ctx, req.Id)
	if err != nil {
		return nil, statusErr(err)
	}
	return &api.TraceResponse{Session: e.Row(), Events: evs, Note: note}, nil
}

func (s *localService) Whoami(ctx context.Context, req *api.WhoamiRequest) (*api.SessionResponse, error) {
	anc := make([]Proc, 0, len(req.Ancestry))
	for _, p := range req.Ancestry {
		anc = append(anc, Proc{PID: int(p.Pid), Start: p.Start})
	}
	return s.session(s.n.decl.Whoami(anc))
}

func (s *localService) Lifecycle(ctx context.Context, req *api.LifecycleRequest) (*api.LifecycleResponse, error) {
	res, err := s.n.decl.LifecycleFrom(ctx, Caller{PID: operator.CallerPID(ctx)}, req.SessionId, presence.TaskState(req.TaskState), req.Reason)
	if err != nil {
		return nil, statusErr(s.n.roster.OwnerErr(req.SessionId, err))
	}
	b, _ := json.Marshal(res.State)
	out := &api.LifecycleResponse{SessionJson: b, Recorded: res.Recorded, Note: res.Note}
	if !res.Recorded {
		out.Note = "unchanged: the session already has this state and reason; nothing recorded"
	}
	return out, nil
}

func (s *localService) SetTask(ctx context.Context, req *api.SetTaskRequest) (*api.MutateResponse, error) {
	st, warn, err := s.n.decl.SetTask(req.SessionId, req.Task)
	if err != nil {
		return nil, statusErr(s.n.roster.OwnerErr(req.SessionId, err))
	}
	b, _ := json.Marshal(st)
	return &api.MutateResponse{SessionJson: b, Warning: warn}, nil
}

func (s *localService) Claim(ctx context.Context, req *api.ClaimRequest) (*api.MutateResponse, error) {
	st, err := s.n.decl.Claim(req.SessionId, req.Paths)
	if err != nil {
		return nil, statusErr(s.n.roster.OwnerErr(req.SessionId, err))
	}
	b, _ := json.Marshal(st)
	return &api.MutateResponse{SessionJson: b}, nil
}

func (s *localService) Errors(ctx context.Context, req *api.ErrorsRequest) (*api.ErrorsResponse, error) {
	ds, err := s.n.ledger.Diagnostics(int(req.Limit))
	if err != nil {
		return nil, statusErr(err)
	}
	if req.Clear {
		if _, err := s.n.ledger.ClearDiagnostics(); err != nil {
			return nil, statusErr(err)
		}
	}
	out := &api.ErrorsResponse{}
	for _, d := range ds {
		out.Diagnostics = append(out.Diagnostics, wire.DiagnosticToAPI(d))
	}
	return out, nil
}

func (s *localService) Status(ctx context.Context, req *api.StatusRequest) (*api.StatusResponse, error) {
	all := s.n.Sessions(true)
	live := 0
	for i := range all {
		if !all[i].Ended {
			live++
		}
	}
	return &api.StatusResponse{Node: s.n.cfg.Name, Version: s.n.cfg.Version, DataDir: s.n.cfg.DataDir,
		LiveSessions: int32(live), Sessions: int32(len(all)), StartedUnixNano: s.n.started.UnixNano(),
		Pid: int32(os.Getpid())}, nil
}

func (s *localService) Members(ctx context.Context, _ *api.MeshRequest) (*api.MembersResponse, error) {
	ms, err := s.n.Members()
	if err != nil {
		return nil, statusErr(err)
	}
	out := &api.MembersResponse{}
	for i := range ms {
		out.Members = append(out.Members, wire.MemberToAPI(ms[i]))
	}
	return out, nil
}

func (s *localService) Raft(ctx context.Context, _ *api.MeshRequest) (*api.RaftResponse, error) {
	st, err := s.n.RaftStats()
	if err != nil {
		return nil, statusErr(err)
	}
	return &api.RaftResponse{Stats: wire.RaftToAPI(st)}, nil
}

func (s *localService) Leave(ctx context.Context, _ *api.MeshRequest) (*api.LeaveResponse, error) {
	if err := s.n.Leave(); err != nil {
		return nil, statusErr(err)
	}
	return &api.LeaveResponse{}, nil
}

func (s *localService) RemoveServer(ctx context.Context, req *api.RemoveServerRequest) (*api.RemoveServerResponse, error) {
	if err := s.n.RemoveServer(ctx, req.Id); err != nil {
		return nil, statusErr(err)
	}
	return &api.RemoveServerResponse{}, nil
}

func (s *localService) Doctor(ctx context.Context, _ *api.DoctorRequest) (*api.DoctorResponse, error) {
	return s.n.Doctor(), nil
}
