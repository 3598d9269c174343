// Package adapter holds what every agent hook adapter shares: the input a
// hook receives, the result it returns, the Adapter interface and the
// optional roles an adapter declares (roles.go). Each agent's knowledge
// lives in its own subpackage (claudecode, codex, cursor, gemini), listed
// once in the registry, presence/adapter/all. Adapters are pure: the clock
// reading and the keyed digest are passed in. They are linked into the
// hook, so they import only presence, these packages and the standard
// library.
//
// # Add an agent: one folder
//
// The hook, `harn hook install`, `harn doctor` and the task runtime name no
// agent: they look the adapter up in presence/adapter/all and ask it
// through the roles below, found by type assertion. To add an agent:
//
//  1. Write presence/adapter/<agent> with a New() whose adapter implements
//     Adapter (Name, Decode, Output) and the required roles: Planner (which
//     events ask the node about a tool call, and what a call writes),
//     Answerer (the agent's exact deny, allow and warn output), Installer
//     (settings file, hook events, layout, timeout unit and the events that
//     may wait, instruction file), Cataloger (its tools) and Describer (what
//     a call asks, for the operator who approves it). Add Approver
//     if a permission request can be answered from the mesh, SessionEnver
//     if the agent exports its session id, Driven if harn can run it as a
//     task's command (its Headless run: command line, input, output
//     decoder, in the same folder), HookTruster if it runs only hooks the user trusts.
//     internal/adaptertest runs the checks every adapter's tests share;
//     internal/hookkit and internal/claudelike hold shared mapping code.
//  2. Add one line to the registry in presence/adapter/all/all.go.
//
// presence/adapter/all's TestEveryRegisteredAdapterDeclaresItsRoles names
// any required role a registered adapter lacks. docs/design.md, "Add an
// agent: one folder", has the table of roles.
package adapter

import (
	"errors"
	"time"

	"github.com/harn-dev/harn/presence"
)

// ErrMalformed is wrapped when a hook's input cannot be decoded. A hook never
// fails its agent on it; the node records a diagnostic.
var ErrMalformed = errors.New("malformed hook input")

// MaxInputBytes bounds a hook payload that an adapter decodes.
const MaxInputBytes = 4 << 20

// Input is what one hook invocation received.
type Input struct {
	// Stdin is the agent's JSON payload.
	Stdin []byte
	// Args are the hook's arguments after the agent name (Codex's legacy
	// notify passes its JSON as the last one).
	Args []string
	// Now is when the hook process started: the event time for payloads
	// that carry none.
	Now time.Time
	// Digest is a keyed digest (HMAC-SHA256 with the node key) for raw
	// content that must never leave the node in the clear.
	Digest func([]byte) string
}

// Result is what an adapter made of one hook invocation.
type Result struct {
	// Native is the agent's event name, e.g. "PreToolUse".
	Native string
	// SessionID is the session the events belong to (a subagent's events
	// carry their own session id).
	SessionID string
	// Events are the canonical events, without id, node or seq.
	Events []presence.Event
	// WantsContext is true when the agent accepts additionalContext on
	// this event (prompt-time peer context).
	WantsContext bool
	// StopHookActive is true when the agent runs this Stop hook again
	// because an earlier Stop hook blocked the stop: the hook must not
	// block again, or it could loop.
	StopHookActive bool
}

// Reply is what the node gives a hook to answer its agent with.
type Reply struct {
	// Context is the prompt-time peer context to inject ("" for none).
	Context string
	// PendingName is a re-minted session name the agent has not shown yet
	// and has not been asked to show ("" for none). An adapter whose agent
	// can be asked at its stop asks for it there.
	PendingName string
}

// Adapter maps one agent's native hook JSON to canonical events.
type Adapter interface {
	// Name is the agent name used in `harn hook <name>`, e.g. "claude-code".
	Name() string
	// Decode maps one invocation. Unknown events and fields are tolerated.
	Decode(in Input) (Result, error)
	// Output is what the hook prints to stdout for res, given the node's
	// reply. Most events print nothing.
	Output(res Result, reply Reply) []byte
}

// Subject says which part of a tool call's input a grant's input pattern
// matches.
type Subject uint8

// The subjects of a tool's input.
const (
	SubjectNone    Subject = iota
	SubjectCommand         // input "command": a shell command line
	SubjectPath            // input "file_path", "notebook_path" or "path"
	SubjectText            // input "url", "query" or "pattern"
)

// ToolSpec is one of an agent's own tools, by the name its hooks give.
type ToolSpec struct {
	// Name is the tool's name in the agent's hook payloads; a name ending
	// in "*" covers every tool with that prefix (an agent's MCP tools).
	Name string
	// Mutates is true when the tool can change files, run commands or
	// otherwise act; false for tools that only read.
	Mutates bool
	// Subject is the part of its input that input patterns match.
	Subject Subject
}

// Cataloger is implemented by an adapter that declares its agent's tools.
// A harn task under that agent is checked against this catalog: a tool
// outside it is refused. Every registered adapter declares one
// (presence/adapter/all checks).
type Cataloger interface {
	Catalog() []ToolSpec
}

// MCPTools is the wildcard entry for an agent's MCP tools
// (`mcp__server__tool`); they may act.
var MCPTools = ToolSpec{Name: "mcp__*", Mutates: true}
