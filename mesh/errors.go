package mesh

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/harn-dev/harn/util/text"
)

// Sentinels. mesh wraps them with %w and a sentence; match them with
// errors.Is, never by text.
var (
	// ErrConfig: a Config field is invalid.
	ErrConfig = errors.New("mesh: invalid config")
	// ErrTooLarge: a delta does not fit one UDP packet.
	ErrTooLarge = errors.New("mesh: delta too large")
	// ErrKeyMismatch: the other side uses another gossip key, or one side
	// has none.
	ErrKeyMismatch = errors.New("mesh: gossip key mismatch")
	// ErrNotStarted: Start has not been called (or has failed).
	ErrNotStarted = errors.New("mesh: not started")
	// ErrAlreadyStarted: Start was called twice.
	ErrAlreadyStarted = errors.New("mesh: already started")
	// ErrShutdown: the mesh has left or is shut down.
	ErrShutdown = errors.New("mesh: left or shut down")
	// ErrTimeout: a graceful operation ran out of time; the mesh still works.
	ErrTimeout = errors.New("mesh: timeout")
	// ErrJoin: no seed could be joined.
	ErrJoin = errors.New("mesh: join failed")
	// ErrBind: the gossip address cannot be bound (the cause, e.g.
	// syscall.EADDRINUSE, is wrapped too).
	ErrBind = errors.New("mesh: cannot bind the gossip address")
)

// probeBind binds the gossip address on TCP and UDP, as memberlist will,
// and releases it.
func probeBind(host string, port int) error {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	return u.Close()
}

// keyMismatchTexts are the messages memberlist v0.7.0 produces, on either
// side of a push/pull, when the two nodes' keys differ or one has none. The
// remote side's message comes back inside "remote error: …".
var keyMismatchTexts = []string{
	"no installed keys could decrypt the message",
	"remote state is encrypted and encryption is not configured",
	"encryption is configured but remote state is not encrypted",
}

// classifyJoinErr wraps a memberlist Join error into ErrKeyMismatch or
// ErrJoin. memberlist builds these errors with fmt.Errorf("%v") inside a
// go-multierror, so no type or sentinel survives: the text is the only
// signal. This is the one place mesh reads error text, so that nothing above
// it ever has to.
func classifyJoinErr(err error) error {
	if err == nil {
		return nil
	}
	text := strings.ToLower(err.Error())
	for _, t := range keyMismatchTexts {
		if strings.Contains(text, t) {
			return fmt.Errorf("%w: the gossip keys differ between this node and the mesh; "+
				"give every node the same secret key (or none): %s", ErrKeyMismatch, joinErrText(err))
		}
	}
	return fmt.Errorf("%w: %s", ErrJoin, joinErrText(err))
}

// joinErrText renders a memberlist error on one line: go-multierror's list
// (found through its WrappedErrors method, without importing it) becomes
// "a; b".
func joinErrText(err error) string {
	var multi interface{ WrappedErrors() []error }
	if errors.As(err, &multi) {
		var parts []string
		for _, e := range multi.WrappedErrors() {
			parts = append(parts, joinErrText(e))
		}
		return strings.Join(parts, "; ")
	}
	return text.OneLine(err.Error())
}
