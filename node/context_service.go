package node

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasksvc"
)

// maxContextID bounds the session id of a context request.
const maxContextID = 256

// Context describes a harn session's context on this node (harn context).
// The local socket's caller may read it as it may read the session's
// trace.
func (s *localService) Context(ctx context.Context, req *api.ContextRequest) (*api.ContextResponse, error) {
	if req.Session == "" || len(req.Session) > maxContextID {
		return nil, status.Error(codes.InvalidArgument, "context: name a harn session id")
	}
	if s.n.tasks == nil {
		return nil, status.Error(codes.FailedPrecondition, "context: this node runs no task runtime")
	}
	v, err := s.n.tasks.Context(req.Session, req.ProviderView)
	if err != nil {
		return nil, tasksvc.Status(err)
	}
	return &api.ContextResponse{ReportJson: v.Report, ProviderJson: v.Provider}, nil
}
