package node

import (
	"github.com/harn-dev/harn/node/declare"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/trustadmin"
	"github.com/harn-dev/harn/node/upkeep"
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

// Declarations about a session (node/declare).
type (
	// GitChecker runs the git finalization check.
	GitChecker = declare.GitChecker
	// Caller is the process that asked for a lifecycle declaration.
	Caller = declare.Caller
	// Proc is a process of a caller's ancestry.
	Proc = declare.Proc
	// LifecycleResult is the outcome of a declaration.
	LifecycleResult = declare.LifecycleResult
)

// The caller refusals of a lifecycle declaration (node/declare).
var (
	ErrHarnRun       = declare.ErrHarnRun
	ErrNotOwnSession = declare.ErrNotOwnSession
)

// The refusals of an operator declaration and of bad input (node/operator).
var (
	ErrRefused    = operator.ErrRefused
	ErrBadRequest = operator.ErrBadRequest
)

// RefusedError names the check that refused a declaration.
type RefusedError = operator.RefusedError

// ReasonProcessGone is the session.end reason the reaper records
// (node/upkeep).
const ReasonProcessGone = upkeep.ReasonProcessGone
