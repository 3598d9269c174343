package api

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the ErrorInfo domain of the node's reasons.
const ErrorDomain = "harn.dev"

// The ErrorInfo reasons of the refusals a client tells apart. A status
// that carries one maps to the sentinel beside it (Err).
const (
	// ReasonLedgerUnwritable: the node's ledger cannot be written (a full
	// or failing disk); events are spooled until it can.
	ReasonLedgerUnwritable = "LEDGER_UNWRITABLE"
	// ReasonWriteRefused: the registry's write authority refused a write
	// the caller's certificate may not make.
	ReasonWriteRefused = "REGISTRY_WRITE_REFUSED"
	// ReasonOwnerUnreachable: an action routed to the node that owns the
	// session did not reach it.
	ReasonOwnerUnreachable = "OWNER_UNREACHABLE"
)

// The client-side sentinels of the reasons.
var (
	ErrLedgerUnwritable = errors.New("node: ledger unwritable")
	ErrWriteRefused     = errors.New("node: registry write refused")
	ErrOwnerUnreachable = errors.New("node: the session's node is unreachable")
)

var reasonErrs = map[string]error{
	ReasonLedgerUnwritable: ErrLedgerUnwritable,
	ReasonWriteRefused:     ErrWriteRefused,
	ReasonOwnerUnreachable: ErrOwnerUnreachable,
}

// StatusError is a refusal the node gave: its gRPC code, its ErrorInfo
// reason ("" when none) and its message. It unwraps to the reason's
// sentinel, so errors.Is(err, ErrWriteRefused) holds for one.
type StatusError struct {
	Code    codes.Code
	Reason  string
	Message string
}

func (e *StatusError) Error() string { return e.Message }

// Unwrap is the reason's sentinel (nil for no known reason).
func (e *StatusError) Unwrap() error { return reasonErrs[e.Reason] }

// Reason is the ErrorInfo reason of the node's domain that err's status
// carries, "" when none.
func Reason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == ErrorDomain {
			return info.Reason
		}
	}
	return ""
}

// Err maps a gRPC error to a *StatusError (nil stays nil; an error that
// is no status is returned as it is).
func Err(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return &StatusError{Code: st.Code(), Reason: Reason(err), Message: st.Message()}
}

// WithReason is a status error of code and msg carrying reason as its
// ErrorInfo (the server side of Err).
func WithReason(code codes.Code, reason, msg string) error {
	st := status.New(code, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}); err == nil {
		st = d
	}
	return st.Err()
}
