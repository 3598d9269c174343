package node

import "github.com/harn-dev/harn/node/layout"

// ListenError says that one of the node's listeners could not bind
// (layout.ListenError).
type ListenError = layout.ListenError

func listenErr(listener, flag, host string, port int, err error) error {
	return layout.ListenErr(listener, flag, host, port, err)
}
