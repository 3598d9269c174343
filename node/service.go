package node

import (
	"context"
	"errors"
	"os"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/presence"
)

// localService adapts the node to the local wire's generated server
// interface (api.LocalServer).
type localService struct {
	n *Node
}

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
