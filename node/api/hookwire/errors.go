package hookwire

import (
	"errors"
	"fmt"
)

// Code is a gRPC status code; the local wire carries the node's statuses
// by the same numbers.
type Code uint32

// The codes, as gRPC numbers them.
const (
	OK Code = iota
	Canceled
	Unknown
	InvalidArgument
	DeadlineExceeded
	NotFound
	AlreadyExists
	PermissionDenied
	ResourceExhausted
	FailedPrecondition
	Aborted
	OutOfRange
	Unimplemented
	Internal
	Unavailable
	DataLoss
	Unauthenticated
)

var codeNames = [...]string{"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
	"PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented", "Internal",
	"Unavailable", "DataLoss", "Unauthenticated"}

// String is the code's name, as gRPC writes it.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint32(c))
}

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
	ErrNotFound       = errors.New("api: not found")          // NotFound
	ErrInvalid        = errors.New("api: invalid argument")   // InvalidArgument
	ErrRefused        = errors.New("api: refused by a rule")  // FailedPrecondition
	ErrAmbiguous      = errors.New("api: ambiguous")          // Aborted
	ErrNoLeader       = errors.New("api: no registry leader") // ResourceExhausted
	ErrUnimplemented  = errors.New("api: not served here")    // Unimplemented
	ErrUnavailable    = errors.New("api: unavailable")        // Unavailable, DeadlineExceeded
	ErrPermission     = errors.New("api: permission denied")  // PermissionDenied
	ErrInternal       = errors.New("api: failed in the node") // any other code
	errCanceledByPeer = errors.New("api: canceled")           // Canceled
)

// Sentinels of the node's answers, by ErrorInfo reason.
var (
	ErrLedgerUnwritable = errors.New("api: the node's ledger refuses writes")  // ReasonLedgerUnwritable
	ErrWriteRefused     = errors.New("api: registry write refused")            // ReasonWriteRefused
	ErrOwnerUnreachable = errors.New("api: the session's node is unreachable") // ReasonOwnerUnreachable
)

// StatusError is a node's status as an error: errors.Is matches it against
// the sentinel of its code and the one of its reason. It comes from the
// local wire's reply (or, in the node, from a gRPC status through
// apigrpc.Error); its text is the status's.
type StatusError struct {
	code   Code
	msg    string
	Reason string            // the ErrorInfo reason of ErrorDomain, or ""
	Meta   map[string]string // that ErrorInfo's metadata, or nil
	cause  error             // why a call failed before the node answered
}

func (e *StatusError) wrap(cause error) *StatusError { e.cause = cause; return e }

// Unwrap is the cause of a call that failed before the node answered (a
// dialer's error, a context's end), nil for the node's own answers.
func (e *StatusError) Unwrap() error { return e.cause }

// NewStatusError is the error of a status of code c and message msg that
// carries reason and meta (of ErrorDomain) when reason is not "".
func NewStatusError(c Code, msg, reason string, meta map[string]string) *StatusError {
	return &StatusError{code: c, msg: msg, Reason: reason, Meta: meta}
}

// Error is the status's text, as gRPC writes it.
func (e *StatusError) Error() string {
	return fmt.Sprintf("rpc error: code = %s desc = %s", e.code, e.msg)
}

// Code is the status code.
func (e *StatusError) Code() Code { return e.code }

// Message is the node's message (it may quote agent or peer text: make it
// one line before a terminal).
func (e *StatusError) Message() string { return e.msg }

// Is matches the sentinels of the code and of the reason.
func (e *StatusError) Is(target error) bool {
	return target == codeSentinel(e.code) || (e.Reason != "" && target == reasonSentinel(e.Reason))
}

// CodeOf is the status code of err: OK for nil, Unknown for an
// error that is not a *StatusError.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.code
	}
	return Unknown
}

func codeSentinel(c Code) error {
	switch c {
	case NotFound:
		return ErrNotFound
	case InvalidArgument:
		return ErrInvalid
	case FailedPrecondition:
		return ErrRefused
	case Aborted:
		return ErrAmbiguous
	case ResourceExhausted:
		return ErrNoLeader
	case Unimplemented:
		return ErrUnimplemented
	case Unavailable, DeadlineExceeded:
		return ErrUnavailable
	case PermissionDenied:
		return ErrPermission
	case Canceled:
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
