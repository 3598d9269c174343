package operator

import "errors"

// ErrRefused wraps every refusal of an operator declaration. A refusal
// writes no event.
var ErrRefused = errors.New("node: refused")

// ErrBadRequest wraps operator input that is malformed.
var ErrBadRequest = errors.New("node: bad request")

// RefusedError names the check that refused a declaration.
type RefusedError struct {
	Check string
	Err   error
}

func (e *RefusedError) Error() string { return e.Check + ": " + e.Err.Error() }

// Unwrap returns both the sentinel and the cause.
func (e *RefusedError) Unwrap() []error { return []error{ErrRefused, e.Err} }
