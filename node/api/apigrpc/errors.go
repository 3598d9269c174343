// Package apigrpc is the node's gRPC face of the contract in node/api: the
// generated node-to-node services (Cluster, HostedPeer) and the statuses
// with the node's ErrorInfo reasons, which the local wire's server
// (node/localapi) also answers with. The daemon imports it; the client
// (harn) never does, so that no hook links gRPC.
package apigrpc

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
)

// WithReason is a status of code c and message msg that carries reason (of
// api.ErrorDomain) in an ErrorInfo.
func WithReason(c codes.Code, reason, msg string) error {
	return WithReasonMeta(c, reason, msg, nil)
}

// WithReasonMeta is WithReason with the ErrorInfo's metadata.
func WithReasonMeta(c codes.Code, reason, msg string, meta map[string]string) error {
	st := status.New(c, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: api.ErrorDomain, Metadata: meta}); err == nil {
		st = d
	}
	return st.Err()
}

// info is the ErrorInfo of the node's domain that st carries, nil when none.
func info(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok && i.Domain == api.ErrorDomain {
			return i
		}
	}
	return nil
}

// Status is err as a gRPC status: a *api.StatusError keeps its code,
// message and reason; any other error is status.Convert's.
func Status(err error) *status.Status {
	var se *api.StatusError
	if errors.As(err, &se) {
		if se.Reason == "" {
			return status.New(codes.Code(se.Code()), se.Message())
		}
		return status.Convert(WithReasonMeta(codes.Code(se.Code()), se.Reason, se.Message(), se.Meta))
	}
	return status.Convert(err)
}

// Error maps an error from a gRPC call to a *api.StatusError; nil stays
// nil, and an error that carries no status (a context's end, say) comes
// back as it is.
func Error(err error) error {
	if err == nil {
		return nil
	}
	var se *api.StatusError
	if errors.As(err, &se) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	if i := info(st); i != nil {
		return api.NewStatusError(st.Code(), st.Message(), i.Reason, i.Metadata)
	}
	return api.NewStatusError(st.Code(), st.Message(), "", nil)
}

// Reason is the ErrorInfo reason of the node's domain that err's status
// carries, "" when none.
func Reason(err error) string {
	reason, _ := reasonOf(err)
	return reason
}

// Metadata is the ErrorInfo metadata of the node's domain that err's
// status carries, nil when none.
func Metadata(err error) map[string]string {
	_, meta := reasonOf(err)
	return meta
}

// reasonOf is the ErrorInfo of the node's domain that err carries, as a
// *api.StatusError or a gRPC status.
func reasonOf(err error) (string, map[string]string) {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Reason, se.Meta
	}
	if st, ok := status.FromError(err); ok {
		if i := info(st); i != nil {
			return i.Reason, i.Metadata
		}
	}
	return "", nil
}
