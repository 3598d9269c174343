package subagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/text"
)

// The tools of this room, as a model sees them.
const (
	ToolAgent   = "agent"   // the parent's: start a child and wait for its handoff
	ToolHandoff = "handoff" // the child's: report to the parent
)

// ProviderHarn is the provider of both tools: harn's own, loaded at task
// start.
const ProviderHarn = "harn"

const agentSchema = `{"type":"object","properties":{` +
	`"profile":{"type":"string","minLength":1,"description":"implementer, explorer, reviewer, or a profile of the project's .harn/agents"},` +
	`"brief":{"type":"string","minLength":1,"description":"everything the child needs: it sees neither this conversation nor its files' history"}},` +
	`"required":["profile","brief"],"additionalProperties":false}`

var (
	agentSpec = mkSpec(ToolAgent, "Start a subagent with a profile and an explicit brief, and wait for its handoff "+
		"(status, changes, verification, unresolved). Several agent calls in one step run in parallel. "+
		"The subagent sees only its brief, never this conversation.", agentSchema, true)
	handoffSpec = mkSpec(ToolHandoff, "Report to the agent that started you, and end your work: status (done, partial, blocked, failed), "+
		"changes, verification and unresolved. The parent receives only this.", HandoffSchema, false)
)

func mkSpec(name, desc, schema string, mutating bool) tools.Spec {
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		panic("subagent: bad schema of " + name + ": " + err.Error())
	}
	canon, _ := json.Marshal(v)
	return tools.Spec{Name: name, Description: desc, Schema: canon, Mutating: mutating, Provider: ProviderHarn,
		Hash: tools.Hash(canon), Waits: name == ToolAgent}
}

// AgentSpec and HandoffSpec are the two tools' specs.
func AgentSpec() tools.Spec   { return agentSpec }
func HandoffSpec() tools.Spec { return handoffSpec }

// ParentBox is a parent session's tool box: the inner box's tools and the
// agent tool, which spawns a child and waits on the manager's waiter.
type ParentBox struct {
	tools.Box
	M *Manager
}

var _ tools.Box = (*ParentBox)(nil)

// Specs are the inner box's and the agent tool.
func (b *ParentBox) Specs(session, task string) []tools.Spec {
	return withSpec(b.Box.Specs(session, task), agentSpec)
}

// withSpec appends s unless in has a spec of its name (a box that serves
// the tool as an extra already lists it).
func withSpec(in []tools.Spec, s tools.Spec) []tools.Spec {
	if slices.ContainsFunc(in, func(x tools.Spec) bool { return x.Name == s.Name }) {
		return in
	}
	return append(in, s)
}

// AgentTool is the agent tool as a core tool of a parent session's box
// (tools.Config.Extra), so that it is in the session's catalog.
func (m *Manager) AgentTool() tools.Extra {
	b := &ParentBox{M: m}
	return tools.Extra{Spec: agentSpec, Run: b.Run}
}

// HandoffTool is the handoff tool as a core tool of a child's box.
func (m *Manager) HandoffTool(p Profile) tools.Extra {
	b := &ChildBox{M: m, Profile: p}
	return tools.Extra{Spec: handoffSpec, Run: b.Run}
}

// Run runs the agent tool, or the inner box's tools.
func (b *ParentBox) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	if c.Name != ToolAgent {
		return b.Box.Run(ctx, c)
	}
	var args struct {
		Profile string `json:"profile"`
		Brief   string `json:"brief"`
	}
	dec := json.NewDecoder(bytes.NewReader(c.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		err = fmt.Errorf("%w: agent takes {\"profile\", \"brief\"}: %s", ErrBadRequest, text.Clip(text.OneLine(err.Error()), 200))
		return tools.Result{Content: err.Error(), IsError: true}, err
	}
	id, err := b.M.Spawn(Request{Parent: c.Session, ParentTask: c.Task, Call: c.ID, Profile: args.Profile, Brief: args.Brief, Workdir: c.Dir})
	if err != nil {
		msg := err.Error()
		if errors.Is(err, ErrBusy) {
			msg = BusyText
		}
		return tools.Result{Content: msg, IsError: true}, err
	}
	r, err := b.M.Wait(ctx, id)
	if err != nil {
		return tools.Result{Content: "the subagent " + id + " was cancelled: " + err.Error(), IsError: true}, err
	}
	if r.Outcome != OutcomeValid {
		return tools.Result{Content: r.JSON(), IsError: true}, fmt.Errorf("subagent %s: %s: %w", id, r.Outcome, ErrNoHandoff)
	}
	return tools.Result{Content: r.JSON()}, nil
}

// ErrNoHandoff is a child that ended without a valid handoff.
var ErrNoHandoff = errors.New("subagent: no valid handoff")

// ChildBox is a child's tool box: the inner box's tools that its profile
// allows, and the handoff tool.
type ChildBox struct {
	tools.Box
	M       *Manager
	Profile Profile
}

var _ tools.Box = (*ChildBox)(nil)

// Specs are the allowed inner tools and the handoff tool.
func (b *ChildBox) Specs(session, task string) []tools.Spec {
	in := b.Box.Specs(session, task)
	out := slices.DeleteFunc(slices.Clone(in), func(s tools.Spec) bool { return !b.Profile.Allows(s.Name) })
	return withSpec(out, handoffSpec)
}

// Run runs the handoff tool, or an allowed inner tool (the runtime's
// grants refuse the others first; this is the second fence).
func (b *ChildBox) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	if c.Name == ToolHandoff {
		ans, isErr := b.M.Handoff(c.Session, c.Args)
		if isErr {
			return tools.Result{Content: ans, IsError: true}, fmt.Errorf("%w: %s", ErrInvalidHandoff, ans)
		}
		return tools.Result{Content: ans}, nil
	}
	if !b.Profile.Allows(c.Name) {
		err := fmt.Errorf("%w: the %s profile does not allow %s", ErrProfile, b.Profile.Name, text.Clip(c.Name, 128))
		return tools.Result{Content: err.Error(), IsError: true}, err
	}
	return b.Box.Run(ctx, c)
}
