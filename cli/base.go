// Package cli is harn's command line: the cobra commands beside the hook,
// the client's views of the node, as tables or --json. Its base (the
// root, finding and dialing the node, exit codes) is cli/hook's; the TUI
// is cli/tui's. os.Exit is never called here; Main returns the exit code.
package cli

import (
	"io"

	"github.com/harn-dev/harn/cli/hook"
)

// The command line's base lives in cli/hook, which harn-hook links alone:
// finding the node (the data dir, the socket, the config file), dialing and
// starting it, exit codes, output. These are its names here.

const (
	ExitConflict      = hook.ExitConflict
	ExitPortInUse     = hook.ExitPortInUse
	DaemonName        = hook.DaemonName
	ExitAmbiguous     = hook.ExitAmbiguous
	ExitDiskFull      = hook.ExitDiskFull
	ExitError         = hook.ExitError
	ExitFindings      = hook.ExitFindings
	ExitNoDaemon      = hook.ExitNoDaemon
	ExitNoLeader      = hook.ExitNoLeader
	ExitNotFound      = hook.ExitNotFound
	ExitOK            = hook.ExitOK
	ExitPending       = hook.ExitPending
	ExitPermission    = hook.ExitPermission
	ExitRefused       = hook.ExitRefused
	ExitRemoteRefused = hook.ExitRemoteRefused
	ExitTaskRefused   = hook.ExitTaskRefused
	ExitTrust         = hook.ExitTrust
	ExitUnavailable   = hook.ExitUnavailable
	ExitUsage         = hook.ExitUsage
	ExitWaitTimeout   = hook.ExitWaitTimeout
	annWhole          = hook.AnnWhole
	annotWritesConfig = hook.AnnotWritesConfig
	gitMaxLevels      = hook.GitMaxLevels
	maxReply          = hook.MaxReply
	maxSecretFile     = hook.MaxSecretFile
	probeWait         = hook.ProbeWait
)

type (
	gitInfo     = hook.GitInfo
	place       = hook.Place
	silentError = hook.SilentError
)

var (
	clk                   = hook.Clk
	ErrConfigWrite        = hook.ErrConfigWrite
	ErrNoDaemon           = hook.ErrNoDaemon
	ErrNoNode             = hook.ErrNoNode
	addJSONFlag           = hook.AddJSONFlag
	addRemoteApproveFlags = hook.AddRemoteApproveFlags
	addSecretFileFlags    = hook.AddSecretFileFlags
	applySettings         = hook.ApplySettings
	approverNames         = hook.ApproverNames
	approves              = hook.Approves
	asJSON                = hook.AsJSON
	branchOf              = hook.BranchOf
	claimRequests         = hook.ClaimRequests
	commandLineOnly       = hook.CommandLineOnly
	configPath            = hook.ConfigPath
	dialSocket            = hook.DialSocket
	dialState             = hook.DialState
	editDistance          = hook.EditDistance
	execInPlace           = hook.ExecInPlace
	findDaemon            = hook.FindDaemon
	isSecretKey           = hook.IsSecretKey
	loadConfigFile        = hook.LoadConfigFile
	newHookCmd            = hook.NewHookCmd
	newRoot               = hook.NewRoot
	noArgs                = hook.NoArgs
	noNode                = hook.NoNode
	originURL             = hook.OriginURL
	parseConfig           = hook.ParseConfig
	parseConfigFile       = hook.ParseConfigFile
	placeAt               = hook.PlaceAt
	placeOf               = hook.PlaceOf
	probeSocket           = hook.ProbeSocket
	rawArgs               = hook.RawArgs
	readPayload           = hook.ReadPayload
	readSecretFile        = hook.ReadSecretFile
	readSmall             = hook.ReadSmall
	recordConfig          = hook.RecordConfig
	remoteApproveOptions  = hook.RemoteApproveOptions
	repoAt                = hook.RepoAt
	repoNameOfURL         = hook.RepoNameOfURL
	repoOf                = hook.RepoOf
	rpcErr                = hook.RpcErr
	run                   = hook.Run
	setFlag               = hook.SetFlag
	setting               = hook.Setting
	shellQuote            = hook.ShellQuote
	socketDead            = hook.SocketDead
	stampRepo             = hook.StampRepo
	startHint             = hook.StartHint
	startNode             = hook.StartNode
	startedNodeEnv        = hook.StartedNodeEnv
	usageErr              = hook.UsageErr
	userText              = hook.UserText
	walkCommands          = hook.WalkCommands
	withCode              = hook.WithCode
	writeJSON             = hook.WriteJSON
	writeSortedJSON       = hook.WriteSortedJSON
)

// Commit: hook.Commit.
func Commit() string { return hook.Commit() }

// EnvName: hook.EnvName.
func EnvName(flag string) string { return hook.EnvName(flag) }

// ExitCode: hook.ExitCode.
func ExitCode(err error) int { return hook.ExitCode(err) }

// Main: hook.Main.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return hook.Main(args, stdin, stdout, stderr)
}

// Version: hook.Version.
func Version() string { return hook.Version() }
