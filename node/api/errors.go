package api

import "github.com/harn-dev/harn/node/api/hookwire"

// The node's status errors live in node/api/hookwire, which the hook links
// without this package; these are the same values, so errors.Is and
// errors.As match either name.

// Reasons in the errdetails.ErrorInfo that some refusals carry: a client
// tells them apart by reason, never by the text.
const (
	ErrorDomain            = hookwire.ErrorDomain
	ReasonLedgerUnwritable = hookwire.ReasonLedgerUnwritable
	ReasonWriteRefused     = hookwire.ReasonWriteRefused
	ReasonOwnerUnreachable = hookwire.ReasonOwnerUnreachable
	ReasonSessionsRefused  = hookwire.ReasonSessionsRefused
	MetaSessions           = hookwire.MetaSessions
)

// Sentinels of the node's answers, by status code and by reason.
var (
	ErrNotFound         = hookwire.ErrNotFound
	ErrInvalid          = hookwire.ErrInvalid
	ErrRefused          = hookwire.ErrRefused
	ErrAmbiguous        = hookwire.ErrAmbiguous
	ErrNoLeader         = hookwire.ErrNoLeader
	ErrUnimplemented    = hookwire.ErrUnimplemented
	ErrUnavailable      = hookwire.ErrUnavailable
	ErrPermission       = hookwire.ErrPermission
	ErrInternal         = hookwire.ErrInternal
	ErrLedgerUnwritable = hookwire.ErrLedgerUnwritable
	ErrWriteRefused     = hookwire.ErrWriteRefused
	ErrOwnerUnreachable = hookwire.ErrOwnerUnreachable
)

// StatusError is a node's status as an error (hookwire.StatusError).
type StatusError = hookwire.StatusError

// NewStatusError is the error of a status of code c and message msg that
// carries reason and meta (of ErrorDomain) when reason is not "".
func NewStatusError(c hookwire.Code, msg, reason string, meta map[string]string) *StatusError {
	return hookwire.NewStatusError(c, msg, reason, meta)
}

// Code is the status code of err (gRPC's numbers, without gRPC): OK for
// nil, Unknown for an error that is not a *StatusError.
func Code(err error) hookwire.Code { return hookwire.CodeOf(err) }
