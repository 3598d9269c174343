package adapter

import (
	"encoding/json"
	"time"

	"github.com/harn-dev/harn/presence"
)

// The optional roles of an adapter. Each is an interface the registry
// (presence/adapter/all) finds by type assertion, as hashicorp/raft finds a
// transport's optional abilities; presence/adapter/all's tests fail when a
// registered adapter lacks one it must declare (Planner, Answerer,
// Installer, Cataloger). The hook, `harn hook install` and the task runtime
// ask these roles and name no agent themselves.

// Phase says when a tool call's hook fires, for the node's question about
// it.
type Phase string

// The phases of a tool call's hook. Their values are those of the node's
// task query (node/tasks.PhasePre and PhasePost).
const (
	PhaseNone Phase = ""     // no question for the node
	PhasePre  Phase = "pre"  // before the call: the node may deny it
	PhasePost Phase = "post" // after it: the node records it, warns at most
)

// Call is a tool call's hook payload as the decision path reads it.
type Call struct {
	// Event is the agent's native event name.
	Event string
	// Session is the session the call belongs to, as the payload names it.
	Session string
	// Tool and Input are the call, in the names harn's catalogs use (an
	// adapter may rewrite a native form, e.g. a shell hook as "Bash").
	Tool  string
	Input json.RawMessage
	// ID is the agent's id of the call ("" when it gives none).
	ID string
	// Phase is the node's question about the call; PhaseNone asks none.
	Phase Phase
	// Failed is true for the hook of a call that failed.
	Failed bool
	// Permission is true for the agent's permission request: a remote
	// approval (harn hook --remote-approve) may answer it (see Approver).
	Permission bool
	// Cwd is the directory the agent works in, as the payload names it
	// ("" when it names none): where a shell call runs.
	Cwd string
}

// Writes is what one hook says its call writes, for the node's claims.
type Writes struct {
	// Session holds the claims.
	Session string
	// Paths are the files, absolute (relative ones are not claimed).
	Paths []string
	// After is true when the hook fires after the write (the node then
	// claims and warns at most).
	After bool
}

// Planner is implemented by an adapter whose hooks carry tool calls: it
// says which of its events ask the node about a call, and what they write.
type Planner interface {
	// PlanCall reads the call out of a hook's stdin. ok is false when the
	// payload does not decode (nothing is asked or answered then); a
	// payload that is not a tool call has Phase PhaseNone. claimed says
	// whether the call's writes took a claim in a repository.
	PlanCall(stdin []byte, claimed bool) (c Call, ok bool)
	// Writes returns the files the hook's call writes: the paths of evs'
	// claim.write events (ClaimedWrites), and any the adapter reads from
	// the payload itself.
	Writes(stdin []byte, evs []presence.Event) Writes
}

// Answerer is implemented by an adapter that can answer its agent's tool
// call hooks: each method returns the exact bytes the hook prints, in the
// agent's own format (nil prints nothing).
type Answerer interface {
	// Deny refuses the call, telling the agent why.
	Deny(c Call, reason string) []byte
	// Allow lets the call run without the agent's own prompt (an operator
	// confirmed it); reason says who.
	Allow(c Call, reason string) []byte
	// Warn tells the agent of something (a file another session holds)
	// without stopping the call.
	Warn(c Call, reason string) []byte
}

// Asked is what a tool call asks to do, read from its input for the
// operator who approves it: the whole command of a shell tool, or the
// file a write tool writes and what it changes there. It is a reading of
// the raw input: the node bounds and strips it before anyone sees it, and
// it never enters presence or the registry (docs/design.md).
type Asked struct {
	// Command is a shell tool's command line, whole (an argv is joined,
	// quoted as a shell would read it); Dir the directory the call itself
	// names to run in ("" when it names none).
	Command, Dir string
	// Path is the file a write tool writes; Edits what it replaces there
	// (a whole-file write is one Edit from ""); Patch a patch the tool
	// applies as written (Codex's apply_patch), shown as it is.
	Path  string
	Edits []Edit
	Patch string
}

// Edit is one replacement a write tool makes: Old becomes New.
type Edit struct{ Old, New string }

// Empty reports whether a says nothing (a tool that is neither a shell
// nor a write tool: the operator then sees its input as it is).
func (a Asked) Empty() bool {
	return a.Command == "" && a.Path == "" && len(a.Edits) == 0 && a.Patch == ""
}

// Describer is implemented by an adapter that reads its own tools' inputs
// for the operator who approves a call: what `harn agents pending`, the
// board, `agents list --watch` and the notifications show. Every
// registered adapter declares one (presence/adapter/all checks).
type Describer interface {
	Describe(tool string, input json.RawMessage) Asked
}

// Approver is implemented by an adapter whose agent has a permission
// request that a decision given elsewhere in the mesh can answer (`harn
// hook --remote-approve`).
type Approver interface {
	// Permission is the answer to a permission request: allow, or deny
	// with message.
	Permission(allow bool, message string) []byte
}

// SessionApprover is implemented by an Approver whose agent can take
// "allow for this session": an allow that also allows the tool for the
// rest of the session (`harn agents approve --session-wide`).
type SessionApprover interface {
	PermissionForSession(tool string) []byte
}

// Installer is implemented by an adapter that says where its agent keeps
// its hooks and reads its instructions (`harn hook install`).
type Installer interface {
	Install() InstallSpec
}

// InstallSpec is how `harn hook install` wires an agent. A nil part is
// not installed by harn.
type InstallSpec struct {
	Settings     *SettingsSpec
	Instructions *InstructionsSpec
}

// Layout is the shape of an agent's hooks object.
type Layout uint8

// The layouts of an agent's "hooks" object.
const (
	// LayoutGroups: {"Event": [{"matcher": ..., "hooks": [handler]}]}; a
	// handler is {"name"?, "type": "command", "command", "timeout"}.
	LayoutGroups Layout = iota
	// LayoutFlat: {"Event": [{"command", "timeout"?}]} under a top-level
	// "version": 1; only the entries that may wait carry a timeout.
	LayoutFlat
)

// SettingsSpec is where and how an agent keeps its hooks.
type SettingsSpec struct {
	// Dir is the agent's config folder under the home or project folder;
	// File the settings file in it.
	Dir, File string
	// EnvDir names the environment variable that moves the user scope's
	// config folder ("" for none).
	EnvDir string
	// Events are the native events harn registers.
	Events []string
	Layout Layout
	// Matcher is the matcher a group carries ("" writes none).
	Matcher string
	// HandlerName is the "name" a handler carries ("" writes none).
	HandlerName string
	// Unit is the unit of the agent's hook timeout; DefaultTimeout the
	// agent's own kill limit for an entry without one (0: unknown).
	Unit, DefaultTimeout time.Duration
	// Waits are the events whose hook may wait (a task's confirmation):
	// their timeout covers the hook's --approve-wait plus a margin.
	Waits []string
	// ApproveEvent is the permission request whose hook waits with
	// --remote-approve ("" when the agent has none).
	ApproveEvent string
	// JSONC is true when the agent reads its settings with comments.
	JSONC bool
}

// InstructionsSpec is where an agent reads its instructions.
type InstructionsSpec struct {
	// UserDir and File are the user scope's file under the home folder
	// (or File under EnvDir's value, when EnvDir is set).
	UserDir, File, EnvDir string
	// ProjectFile is the project scope's file, relative to the project.
	ProjectFile string
	// Front is written before harn's region in a file harn creates.
	Front string
}

// SessionEnver is implemented by an adapter whose agent exports its
// session id to the commands it runs.
type SessionEnver interface {
	// SessionEnv names the variables, in the order they are read.
	SessionEnv() []string
}

// Driven is implemented by an adapter whose agent harn can also run as a
// task's command (runtime/exec).
type Driven interface {
	// Drivers are the runtime/exec driver names that run this agent: a
	// task under one is checked against this adapter's catalog.
	Drivers() []string
	// ExecExample is a command line that runs the agent as a task (`harn
	// task start --exec`), for help text.
	ExecExample() string
	// Headless is how the agent runs under argv, a command line whose
	// program is one of Drivers (its flags choose the modes); an empty
	// argv is its default command line.
	Headless(argv []string) Headless
}

// ClaimedWrites is the Writes of evs' claim.write events.
func ClaimedWrites(evs []presence.Event) Writes {
	var w Writes
	for i := range evs {
		if evs[i].Type == presence.TypeClaimWrite {
			w.Session = evs[i].SessionID
			w.Paths = append(w.Paths, evs[i].AttrStrings(presence.AttrPaths)...)
		}
	}
	return w
}

// HookTruster is implemented by an adapter whose agent runs an installed
// hook only once the user has trusted it (`harn doctor` checks).
// CallEnder is an optional role: the agent names every tool call by its id
// before and after it runs (Claude Code's PreToolUse and PostToolUse
// carry tool_use_id), so a call announced in a turn that ended without
// its end is known not to have run (denied in the agent's own prompt).
type CallEnder interface {
	ReportsCallEnds() bool
}

type HookTruster interface {
	// TrustFile is the file where the agent records that trust, given
	// the home folder and the environment.
	TrustFile(home string, getenv func(string) string) string
	// CheckTrust reads records (TrustFile's content, at recordsPath) for
	// harn's hooks of the settings file that paths name (its path, then
	// its canonical form), and says what the doctor reports.
	CheckTrust(records []byte, recordsPath string, paths []string, hooks []HookPlace) TrustCheck
}

// HookPlace is one hook of a settings file: its event, and its matcher
// group and handler index.
type HookPlace struct {
	Event          string
	Group, Handler int
}

// TrustCheck is what the doctor reports of an agent's trust in harn's
// hooks: OK, or a finding with its fix.
type TrustCheck struct {
	OK          bool
	Detail, Fix string
}

// Hoster is implemented by an adapter whose agent a node can host in a
// pseudo-terminal it owns (`harn run AGENT`): how the agent is started
// and how its terminal takes input. Pure data; the node's hosting room
// (node/hosted) asks it and names no agent.
type Hoster interface {
	Host() HostSpec
}

// HostSpec is how an agent runs in a terminal a node hosts.
type HostSpec struct {
	// Binary is the agent's interactive command, found on the node's PATH.
	Binary string
	// PromptFlag is the flag before an initial prompt ("-i" for an agent
	// that takes `agent -i PROMPT`); "" passes the prompt as the last
	// positional argument (`agent PROMPT`).
	PromptFlag string
	// Interrupt is what the agent reads as "stop the current step" (Esc).
	Interrupt []byte
	// Submit ends a typed message (a carriage return, as Enter sends).
	Submit []byte
	// DropEnv names variables of the node's environment the agent must
	// not inherit (the agent's own "running inside me" markers, so that a
	// node started from inside the agent can still host it).
	DropEnv []string
}

// Args is the agent's argv for an initial prompt ("" for none).
func (s HostSpec) Args(prompt string) []string {
	argv := []string{s.Binary}
	if prompt == "" {
		return argv
	}
	if s.PromptFlag != "" {
		argv = append(argv, s.PromptFlag)
	} else if len(prompt) > 0 && prompt[0] == '-' {
		argv = append(argv, "--") // a prompt is never read as a flag
	}
	return append(argv, prompt)
}

// Escape is the interrupt key of the agents that hosted terminals know
// (Esc), and Enter is the carriage return a terminal sends for Enter.
var (
	Escape = []byte{0x1b}
	Enter  = []byte{'\r'}
)
