package node

import (
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/operator"
)

// ListenError says that one of the node's listeners could not bind
// (layout.ListenError).
type ListenError = layout.ListenError

func listenErr(listener, flag, host string, port int, err error) error {
	return layout.ListenErr(listener, flag, host, port, err)
}

// The refusals of a caller on another node (node/operator).
var (
	ErrRemoteRefused = operator.ErrRemoteRefused
	ErrRemoteExec    = operator.ErrRemoteExec
)
