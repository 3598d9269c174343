package tasks

import (
	"github.com/harn-dev/harn/node/tasks/taskapi"
	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// The room's wire half lives in package taskwire, which the client links
// without the runtimes; these are its names here.

// Values of the wire.
type (
	Action      = taskwire.Action
	Result      = taskwire.Result
	UsageRow    = taskwire.UsageRow
	HarnOptions = taskwire.HarnOptions
	ContextInfo = taskwire.ContextInfo
	Query       = taskwire.Query
	Verdict     = taskwire.Verdict
	Request     = taskwire.Request
	Answer      = taskwire.Answer
	Launchers   = taskwire.Launchers
	Grant       = taskwire.Grant
)

// The operations of an Action.
const (
	OpStart     = taskwire.OpStart
	OpSteer     = taskwire.OpSteer
	OpFollowUp  = taskwire.OpFollowUp
	OpSupersede = taskwire.OpSupersede
	OpResume    = taskwire.OpResume
	OpCancel    = taskwire.OpCancel
	OpReplace   = taskwire.OpReplace
	OpAck       = taskwire.OpAck
	OpGrants    = taskwire.OpGrants
	OpDigest    = taskwire.OpDigest
	OpConfirm   = taskwire.OpConfirm
	OpDeny      = taskwire.OpDeny
	OpShow      = taskwire.OpShow
	OpReduce    = taskwire.OpReduce
	OpEvents    = taskwire.OpEvents
	OpUsage     = taskwire.OpUsage
	OpHistory   = taskwire.OpHistory
	OpPin       = taskwire.OpPin
	OpCompact   = taskwire.OpCompact
)

// Phases, decisions and names of the wire.
const (
	PhasePre           = taskwire.PhasePre
	PhasePost          = taskwire.PhasePost
	DecideAllow        = taskwire.DecideAllow
	DecideDeny         = taskwire.DecideDeny
	DecideNone         = taskwire.DecideNone
	DecideConfirm      = taskwire.DecideConfirm
	AgentHarn          = taskwire.AgentHarn
	ReasonNodeRestart  = taskwire.ReasonNodeRestart
	MaxLaunchers       = taskwire.MaxLaunchers
	MaxLauncherNameLen = taskwire.MaxLauncherNameLen
	MaxGrantsFileBytes = taskwire.MaxGrantsFileBytes
)

// Errors of launchers (taskwire).
var (
	ErrBadLauncher = taskwire.ErrBadLauncher
	ErrNoLauncher  = taskwire.ErrNoLauncher
)

// Functions of the wire (taskwire).
var (
	IsSessionOp       = taskwire.IsSessionOp
	ValidLauncherName = taskwire.ValidLauncherName
	CheckArgv         = taskwire.CheckArgv
	ParseLauncherFlag = taskwire.ParseLauncherFlag
	ParseRemoteExec   = taskwire.ParseRemoteExec
	Profile           = taskwire.Profile
	ParseGrants       = taskwire.ParseGrants
	FormatGrants      = taskwire.FormatGrants
	ActionToAPI       = taskapi.ActionToAPI
	ActionFromAPI     = taskapi.ActionFromAPI
	GrantsToAPI       = taskapi.GrantsToAPI
	GrantsFromAPI     = taskapi.GrantsFromAPI
	QueryToAPI        = taskapi.QueryToAPI
	QueryFromAPI      = taskapi.QueryFromAPI
	ResultToAPI       = taskapi.ResultToAPI
	ResultFromAPI     = taskapi.ResultFromAPI
	RequestToAPI      = taskapi.RequestToAPI
	RequestFromAPI    = taskapi.RequestFromAPI
)

func clip(s string) string { return taskwire.Clip(s) }

// The kinds of a waiting request (taskwire).
const (
	KindPermission   = taskwire.KindPermission
	KindConfirmation = taskwire.KindConfirmation
)
