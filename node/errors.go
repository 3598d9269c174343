package node

import (
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/trustadmin"
	"github.com/harn-dev/harn/node/web"
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

// The web room's config and errors (node/web).
type WebConfig = web.Config

// The web room's errors and bounds (node/web).
var (
	ErrHTTPAddr      = web.ErrHTTPAddr
	ErrTokenFile     = web.ErrTokenFile
	ErrWebTokenShort = web.ErrWebTokenShort
	ErrPublicURL     = web.ErrPublicURL
	ParsePublicURL   = web.ParsePublicURL
)

// MinWebToken is the shortest token the board accepts.
const MinWebToken = web.MinWebToken

// Mesh init, before a node runs (node/trustadmin).
var (
	InitMesh           = trustadmin.InitMesh
	CreatePendingToken = trustadmin.CreatePendingToken
)
