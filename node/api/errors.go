package api

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Reasons in the errdetails.ErrorInfo that some refusals carry: a client
// tells them apart by reason, never by the text.
const (
	// ErrorDomain is the ErrorInfo domain of the node's reasons.
	ErrorDomain = "harn.dev"
	// ReasonLedgerUnwritable: the node's ledger refuses writes (a full
	// disk, or a data dir it cannot write); reads still work.
	ReasonLedgerUnwritable = "LEDGER_UNWRITABLE"
	// ReasonWriteRefused: the registry leader's write authority refused
	// the write (the caller's node may not make it).
	ReasonWriteRefused = "REGISTRY_WRITE_REFUSED"
	// ReasonOwnerUnreachable: a coordination action routed to the node
	// that owns the session could not reach it.
	ReasonOwnerUnreachable = "OWNER_UNREACHABLE"
	// ReasonSessionsRefused: the registry left sessions of the write out
	// (held by another node, or over the session quota) and applied the
	// rest; the ErrorInfo's MetaSessions names them.
	ReasonSessionsRefused = "REGISTRY_SESSIONS_REFUSED"
	// MetaSessions is the ErrorInfo metadata key of ReasonSessionsRefused:
	// the refused session ids, as a JSON array of strings.
	MetaSessions = "sessions"
)

// Sentinels of the node's answers, by status code.
var (
	ErrNotFound       = errors.New("api: not found")          // codes.NotFound
	ErrInvalid        = errors.New("api: invalid argument")   // codes.InvalidArgument
	ErrRefused        = errors.New("api: refused by a rule")  // codes.FailedPrecondition
	ErrAmbiguous      = errors.New("api: ambiguous")          // codes.Aborted
	ErrNoLeader       = errors.New("api: no registry leader") // codes.ResourceExhausted
	ErrUnimplemented  = errors.New("api: not served here")    // codes.Unimplemented
	ErrUnavailable    = errors.New("api: unavailable")        // codes.Unavailable, codes.DeadlineExceeded
	ErrPermission     = errors.New("api: permission denied")  // codes.PermissionDenied
	ErrInternal       = errors.New("api: failed in the node") // any other code
	errCanceledByPeer = errors.New("api: canceled")           // codes.Canceled
)

// Sentinels of the node's answers, by ErrorInfo reason.
var (
	ErrLedgerUnwritable = errors.New("api: the node's ledger refuses writes")  // ReasonLedgerUnwritable
	ErrWriteRefused     = errors.New("api: registry write refused")            // ReasonWriteRefused
	ErrOwnerUnreachable = errors.New("api: the session's node is unreachable") // ReasonOwnerUnreachable
)

// StatusError is a node's gRPC status as an error: errors.Is matches it
// against the sentinel of its code and the one of its reason. Its text is
// the status's, and GRPCStatus gives the status back (status.FromError
// still works).
type StatusError struct {
	st     *status.Status
	Reason string // the ErrorInfo reason of ErrorDomain, or ""
}

// Error is the status's text.
func (e *StatusError) Error() string { return e.st.Err().Error() }

// GRPCStatus returns the status.
func (e *StatusError) GRPCStatus() *status.Status { return e.st }

// Code is the status code.
func (e *StatusError) Code() codes.Code { return e.st.Code() }

// Message is the node's message (it may quote agent or peer text: make it
// one line before a terminal).
func (e *StatusError) Message() string { return e.st.Message() }

// Is matches the sentinels of the code and of the reason.
func (e *StatusError) Is(target error) bool {
	return target == codeSentinel(e.st.Code()) || (e.Reason != "" && target == reasonSentinel(e.Reason))
}

func codeSentinel(c codes.Code) error {
	switch c {
	case codes.NotFound:
		return ErrNotFound
	case codes.InvalidArgument:
		return ErrInvalid
	case codes.FailedPrecondition:
		return ErrRefused
	case codes.Aborted:
		return ErrAmbiguous
	case codes.ResourceExhausted:
		return ErrNoLeader
	case codes.Unimplemented:
		return ErrUnimplemented
	case codes.Unavailable, codes.DeadlineExceeded:
		return ErrUnavailable
	case codes.PermissionDenied:
		return ErrPermission
	case codes.Canceled:
		return errCanceledByPeer
	}
	return ErrInternal
}

func reasonSentinel(r string) error {
	switch r {
	case ReasonLedgerUnwritable:
		return ErrLedgerUnwritable
	case ReasonWriteRefused:
		return ErrWriteRefused
	case ReasonOwnerUnreachable:
		return ErrOwnerUnreachable
	}
	return nil
}

// Error maps an error from a call to the node to a *StatusError; nil stays
// nil, and an error that carries no status (a context's end, say) comes
// back as it is.
func Error(err error) error {
	if err == nil {
		return nil
	}
	var se *StatusError
	if errors.As(err, &se) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	out := &StatusError{st: st}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == ErrorDomain {
			out.Reason = info.Reason
			break
		}
	}
	return out
}

// Err is Error: the name the node's own callers use.
func Err(err error) error { return Error(err) }

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

// WithReasonMeta is WithReason with the ErrorInfo's metadata.
func WithReasonMeta(c codes.Code, reason, msg string, meta map[string]string) error {
	st := status.New(c, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain, Metadata: meta}); err == nil {
		st = d
	}
	return st.Err()
}

// Metadata is the ErrorInfo metadata of the node's domain that err's
// status carries, nil when none.
func Metadata(err error) map[string]string {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == ErrorDomain {
			return info.Metadata
		}
	}
	return nil
}

// WithReason is a status of code c and message msg that carries reason (of
// ErrorDomain) in an ErrorInfo.
func WithReason(c codes.Code, reason, msg string) error {
	st := status.New(c, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}); err == nil {
		st = d
	}
	return st.Err()
}
