package hook

import "errors"

// Exit codes. Each kind of failure has its own, so scripts can tell them
// apart.
const (
	ExitOK          = 0
	ExitError       = 1  // an unexpected failure
	ExitUsage       = 2  // bad flags, arguments or input
	ExitNotFound    = 3  // unknown session
	ExitRefused     = 4  // a rule refused the request (lifecycle checks)
	ExitUnavailable = 5  // no node answered
	ExitAmbiguous   = 6  // a session prefix matches several sessions
	ExitConflict    = 7  // the data dir is held by another node
	ExitNoLeader    = 8  // the registry has no leader (consistent reads)
	ExitPortInUse   = 9  // a node listener cannot bind its address (port in use)
	ExitFindings    = 10 // harn doctor found something to fix
	// ExitPending: a lifecycle change is recorded in the node's ledger but
	// its registry write is still pending after --timeout (no leader, say).
	// The change is kept and written when the registry can take it.
	ExitPending = 11
)

// Exit codes of task runtimes.
const (
	ExitTaskRefused   = 15 // a task runtime rule refused the action
	ExitRemoteRefused = 16 // the target node refused remote control (unauthenticated channel, its policy, or what a remote task may choose there)
)

// ExitDiskFull: the node's ledger refuses writes (a full disk, or a data dir
// it cannot write); reads still work, and it takes writes again by itself
// once space returns.
const ExitDiskFull = 17

// ExitTrust: refused by mesh trust (TLS, certificate, join token).
const ExitTrust = 12

// codedError carries an exit code with an error.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// silentError exits with a code without printing (the command printed).
type SilentError struct{ Code int }

func (e *SilentError) Error() string { return "" }

func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: code, err: err}
}

func UsageErr(err error) error { return WithCode(ExitUsage, err) }

// ExitCode maps an error to the process exit code.
func ExitCode(err error) int {
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	var se *SilentError
	if errors.As(err, &se) {
		return se.Code
	}
	return ExitError
}

// ExitPermission: a secret file (config, key, token) that others may read,
// one that cannot be read, or a local permission problem (a socket owned by
// another user, or one that answers EACCES).
const ExitPermission = 13

// ExitWaitTimeout: `harn agents wait` gave up after --timeout.
const ExitWaitTimeout = 14

// ExitNoDaemon: a command that runs harnd (`harn node`, `harn mesh init`)
// found it neither beside harn nor on PATH.
const ExitNoDaemon = 18
