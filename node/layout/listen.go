package layout

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// ListenError says that one of the node's listeners could not bind: which
// one, at what address, and the flag that moves it.
type ListenError struct {
	// Listener is "socket", "rpc", "raft" or "gossip".
	Listener string
	Addr     string
	// Flag is the command-line flag that sets the address.
	Flag string
	Err  error
}

func (e *ListenError) Error() string {
	if errors.Is(e.Err, syscall.EADDRINUSE) {
		return fmt.Sprintf("node: the %s address %s is in use; free it or pass another %s", e.Listener, e.Addr, e.Flag)
	}
	return fmt.Sprintf("node: cannot listen on the %s address %s (%v); pass another %s", e.Listener, e.Addr, e.Err, e.Flag)
}

// Unwrap returns the cause.
func (e *ListenError) Unwrap() error { return e.Err }

// ListenErr is the ListenError of a listener at host:port.
func ListenErr(listener, flag, host string, port int, err error) error {
	return &ListenError{Listener: listener, Addr: net.JoinHostPort(host, strconv.Itoa(port)), Flag: flag, Err: err}
}

// IsAddrInUse reports whether err says an address is taken.
func IsAddrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }
