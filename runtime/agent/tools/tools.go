// Package tools holds what harn's own agent loop may call: the core
// workspace tools (read, write, edit, shell, grep, glob), the discovery
// tools (capabilities_list, capabilities_search, capabilities_inspect,
// tools_load, skills_activate), skills, and MCP servers' tools as provider
// bindings. Its room is what a model can call and how one call runs; the
// loop in runtime/agent decides when, and the task runtime (package
// runtime) decides whether.
package tools

import (
	"context"
	"encoding/json"
)

// Spec is one tool as a model sees it, with its contract.
type Spec struct {
	Name        string          // the name the model calls
	Description string          // one paragraph for the model
	Schema      json.RawMessage // JSON schema of the arguments (an object schema)
	Mutating    bool            // changes the workspace or the world
	Provider    string          // "core", "harn" (discovery) or "mcp:<server>"
	Hash        string          // contract hash: hex SHA-256 of Schema
	// Waits marks a tool whose call waits on work done elsewhere (the
	// agent tool waits for a child's handoff): the loop runs such calls
	// outside its Parallel bound, so that one step's children run at
	// once.
	Waits bool
}

// Call is one tool call the model made, after the loop's pre-call check
// (runtime.Begin) allowed it.
type Call struct {
	ID      string          // the provider's tool-call id
	Name    string          // Spec.Name
	Args    json.RawMessage // the model's arguments, as sent
	Session string          // harn session id
	Task    string          // runtime task id
	Dir     string          // the session's working directory
}

// Result is what the model gets back from one call.
type Result struct {
	Content string // text for the model, already bounded in size
	IsError bool   // the call failed; Content says why
}

// Box is the seam between the loop and the tools of one node. Toolbox
// implements it; DESIGN.md describes the flow.
type Box interface {
	// Specs are the tools a model request of this task carries now, in a
	// stable order: core, discovery, then what tools_load admitted (an MCP
	// server's tools are absent until then, and a loaded one whose server
	// changed it since is withdrawn). Hash is the tool's contract: the
	// loop states it to runtime.Begin, which refuses a call whose
	// contract differs from the task's snapshot.
	Specs(session, task string) []Spec
	// Run runs one call. ctx ends when the call is cancelled (abort,
	// harn task cancel); Run must return within the loop's grace period.
	// The Result is always set; the error is non-nil exactly when
	// Result.IsError is, and wraps what went wrong (ctx's error when the
	// call was cancelled).
	Run(ctx context.Context, c Call) (Result, error)
	// Prompt handles a user prompt's /name skill activations for the task
	// and returns status lines to show (activated, skipped as too big).
	Prompt(session, task, text string) []string
	// Instructions are the texts of the task's active skills, for the
	// working set of the next model request.
	Instructions(session, task string) []string
	// EndStep ends step-scoped state (skills the model activated): a
	// skill activated during a step is in the next request's
	// Instructions and leaves at the end of that step. It calls the
	// runtime's EndStep itself; a loop that also does must do so first.
	EndStep(session, task string)
}
