package trust

import (
	"errors"
	"fmt"

	"github.com/harn-dev/harn/util/secretfile"
)

// Errors. Every error this package returns wraps one of them (match with
// errors.Is).
var (
	// ErrBadName: a node name is empty, too long or has characters outside
	// [A-Za-z0-9._-].
	ErrBadName = errors.New("trust: bad node name")
	// ErrBadRole: a role other than "server" or "node".
	ErrBadRole = errors.New("trust: bad role")
	// ErrNoIdentity: a certificate carries no (or more than one) mesh identity.
	ErrNoIdentity = errors.New("trust: certificate carries no mesh identity")
	// ErrNoPeerCert: the peer presented no certificate.
	ErrNoPeerCert = errors.New("trust: peer presented no certificate")
	// ErrUntrusted: the peer's certificate does not chain to a trusted mesh CA.
	ErrUntrusted = errors.New("trust: certificate is not signed by a trusted mesh CA")
	// ErrExpired: the certificate is expired or not yet valid.
	ErrExpired = errors.New("trust: certificate is expired or not yet valid")
	// ErrRevoked: the certificate's serial is on the revocation list.
	ErrRevoked = errors.New("trust: certificate is revoked")
	// ErrWrongRole: the peer's role is not the one this port requires.
	ErrWrongRole = errors.New("trust: peer does not have the required role")
	// ErrWrongPeer: the peer is not the node this side expected.
	ErrWrongPeer = errors.New("trust: peer is not the expected node")
	// ErrPinMismatch: the server's CA does not match the fingerprint pinned in
	// the join token.
	ErrPinMismatch = errors.New("trust: server's CA does not match the join token's CA fingerprint")
	// ErrBadToken: a join token string does not parse.
	ErrBadToken = errors.New("trust: malformed join token")
	// ErrTokenUnknown: no token has this id (never created, revoked or purged).
	ErrTokenUnknown = errors.New("trust: unknown join token")
	// ErrTokenSecret: the token id exists and the secret is wrong.
	ErrTokenSecret = errors.New("trust: wrong join token secret")
	// ErrTokenExpired: the token is past its TTL.
	ErrTokenExpired = errors.New("trust: join token expired")
	// ErrTokenUsedUp: the token has been redeemed as often as it allows.
	ErrTokenUsedUp = errors.New("trust: join token has no uses left")
	// ErrJoinRefused: the server refused a join or renewal for another reason.
	ErrJoinRefused = errors.New("trust: join refused")
	// ErrBadMessage: a join or renewal message does not decode or is invalid.
	ErrBadMessage = errors.New("trust: bad join message")
	// ErrTooLarge: a message is over its size bound.
	ErrTooLarge = errors.New("trust: message too large")
	// ErrBadCSR: a certificate request does not parse, its signature is
	// wrong, or its key type is not allowed.
	ErrBadCSR = errors.New("trust: bad certificate request")
	// ErrNoCA: the directory holds no mesh CA.
	ErrNoCA = errors.New("trust: no mesh CA")
	// ErrBadPEM: a PEM file does not hold what it should.
	ErrBadPEM = errors.New("trust: bad PEM file")
	// ErrRotation: a CA rotation step out of order (rotate while one is
	// running, finish with none running).
	ErrRotation = errors.New("trust: CA rotation")
	// ErrInsecureFile: a secret file or directory is readable by group or
	// others, or is not a regular file.
	ErrInsecureFile = secretfile.ErrInsecure
	// ErrNotOwner: a node tried to write a session it does not own.
	ErrNotOwner = errors.New("trust: caller does not own the session")
	// ErrRemoteControl: the target node's remote-control policy refuses the
	// caller.
	ErrRemoteControl = errors.New("trust: remote control refused")
	// ErrBadPolicy: a --remote-control value does not parse.
	ErrBadPolicy = errors.New("trust: bad remote-control policy")
	// ErrPolicyMesh: the old --remote-control value mesh, which is gone
	// (ParseRemoteControl wraps it with ErrBadPolicy).
	ErrPolicyMesh = errors.New("--remote-control mesh is gone")
	// ErrClosed: the renewer is closed.
	ErrClosed = errors.New("trust: closed")
)

// RefusalError is a refusal of a known caller: it names the caller's
// certificate so that both the caller's error and the target's log line say
// who was refused. It wraps a sentinel (ErrNotOwner, ErrRemoteControl,
// ErrRevoked, ErrWrongRole, ...).
type RefusalError struct {
	Caller Identity
	Err    error
	Detail string
}

func (e *RefusalError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%v: caller %s", e.Err, e.Caller)
	}
	return fmt.Sprintf("%v: caller %s: %s", e.Err, e.Caller, e.Detail)
}

func (e *RefusalError) Unwrap() error { return e.Err }
