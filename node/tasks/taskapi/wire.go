// Package taskapi holds the task values on node/api's wire, one function each
// way: its room is the conversion the node and the whole client need, apart
// from taskwire so that the hook links taskwire without node/api.
package taskapi

import (
	"fmt"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/execwire"
)

// The task runtime's values on the wire (node/api): one function each way
// per type, used by the node's service and by the client.

// ActionToAPI is a on the wire.
func ActionToAPI(a taskwire.Action) *api.TaskAction {
	return &api.TaskAction{Op: a.Op, Session: a.Session, Task: a.Task, Text: a.Text, Command: a.Command,
		Launcher: a.Launcher, Workdir: a.Workdir, Grants: GrantsToAPI(a.Grants), GrantsSet: a.Grants != nil,
		RequiresSuccess: a.RequiresSuccess, Call: a.Call, Reason: a.Reason, By: a.By,
		Capability: a.Capability, Level: a.Level, Agent: a.Agent, Harn: harnToAPI(a.Harn),
		Since: int64(a.Since), WaitMs: int32(a.WaitMS)}
}

func harnToAPI(o *taskwire.HarnOptions) *api.HarnOptions {
	if o == nil {
		return nil
	}
	return &api.HarnOptions{Provider: o.Provider, ProviderUrl: o.URL, Model: o.Model,
		ContextWindow: int32(o.ContextWindow), MaxOutput: int32(o.MaxOutput), Mcp: o.MCP, Key: o.Key,
		Fork: o.Fork, NoCompaction: o.NoCompaction, Compaction: o.Compaction}
}

func harnFromAPI(o *api.HarnOptions) *taskwire.HarnOptions {
	if o == nil {
		return nil
	}
	return &taskwire.HarnOptions{Provider: o.GetProvider(), URL: o.GetProviderUrl(), Model: o.GetModel(),
		ContextWindow: int(o.GetContextWindow()), MaxOutput: int(o.GetMaxOutput()), MCP: o.GetMcp(), Key: o.GetKey(),
		Fork: o.GetFork(), NoCompaction: o.GetNoCompaction(), Compaction: o.GetCompaction()}
}

func usageToAPI(u *runtime.Usage) *api.ModelUsage {
	if u == nil {
		return nil
	}
	return &api.ModelUsage{Provider: u.Provider, Node: u.Node, Agent: u.Agent, EstimatedInput: int32(u.Estimated),
		Input: int32(u.Input), Output: int32(u.Output), CacheRead: int32(u.CacheRead), CacheWrite: int32(u.CacheWrite),
		Retries: int32(u.Retries), Error: u.Error}
}

func usageFromAPI(u *api.ModelUsage) *runtime.Usage {
	if u == nil {
		return nil
	}
	return &runtime.Usage{Provider: u.GetProvider(), Node: u.GetNode(), Agent: u.GetAgent(), Estimated: int(u.GetEstimatedInput()),
		Input: int(u.GetInput()), Output: int(u.GetOutput()), CacheRead: int(u.GetCacheRead()), CacheWrite: int(u.GetCacheWrite()),
		Retries: int(u.GetRetries()), Error: u.GetError()}
}

// ActionFromAPI reads an action from the wire; a grant with an unknown
// level is ErrBadAction.
func ActionFromAPI(a *api.TaskAction) (taskwire.Action, error) {
	if a == nil {
		return taskwire.Action{}, fmt.Errorf("%w: no action", taskwire.ErrBadAction)
	}
	out := taskwire.Action{Op: a.Op, Session: a.Session, Task: a.Task, Text: a.Text, Command: a.Command,
		Launcher: a.Launcher, Workdir: a.Workdir, RequiresSuccess: a.RequiresSuccess, Call: a.Call,
		Reason: a.Reason, By: a.By, Capability: a.Capability, Level: a.Level, Agent: a.Agent,
		Harn: harnFromAPI(a.Harn), Since: int(a.Since), WaitMS: int(a.WaitMs)}
	if a.GrantsSet {
		g, err := GrantsFromAPI(a.Grants)
		if err != nil {
			return out, fmt.Errorf("%w: %w", taskwire.ErrBadAction, err)
		}
		out.Grants = g
		if out.Grants == nil {
			out.Grants = []taskwire.Grant{}
		}
	}
	return out, nil
}

// GrantsToAPI is gs on the wire.
func GrantsToAPI(gs []taskwire.Grant) []*api.Grant {
	var out []*api.Grant
	for _, g := range gs {
		out = append(out, &api.Grant{Level: g.Level.String(), Capability: g.Capability, Match: g.Match, Confirm: g.Confirm})
	}
	return out
}

// GrantsFromAPI reads grants from the wire.
func GrantsFromAPI(gs []*api.Grant) ([]taskwire.Grant, error) {
	var out []taskwire.Grant
	for _, g := range gs {
		var l runtime.Level
		if err := l.UnmarshalText([]byte(g.GetLevel())); err != nil {
			return nil, err
		}
		out = append(out, taskwire.Grant{Level: l, Capability: g.GetCapability(), Match: g.GetMatch(), Confirm: g.GetConfirm()})
	}
	return out, nil
}

// QueryToAPI is q on the wire (without claims: they ride beside it).
func QueryToAPI(q taskwire.Query) *api.DecideQuery {
	return &api.DecideQuery{Phase: q.Phase, Session: q.Session, Task: q.Task, Tool: q.Tool, Input: q.Input,
		Call: q.Call, Failed: q.Failed, WaitMs: q.Wait.Milliseconds(), Cwd: q.Cwd}
}

// QueryFromAPI reads a query from the wire.
func QueryFromAPI(q *api.DecideQuery) taskwire.Query {
	return taskwire.Query{Phase: q.GetPhase(), Session: q.GetSession(), Task: q.GetTask(), Tool: q.GetTool(),
		Input: q.GetInput(), Call: q.GetCall(), Failed: q.GetFailed(),
		Wait: time.Duration(max(q.GetWaitMs(), 0)) * time.Millisecond, Cwd: q.GetCwd()}
}

// ResultToAPI is r on the wire.
func ResultToAPI(r taskwire.Result) *api.TaskResult {
	out := &api.TaskResult{Node: r.Node, Session: r.Session, Task: taskViewToAPI(r.Task), Text: r.Text,
		Output: r.Output, Message: r.Message, Interrupt: r.Interrupt, Next: int64(r.Next), QueueText: r.QueueText,
		Reopened: r.Reopened}
	if c := r.Context; c != nil {
		out.HarnContext = &api.HarnContext{Used: int32(min(c.Used, 1<<30)), Budget: int32(min(c.Budget, 1<<30)), Compaction: c.Compaction}
		if !c.CompactedAt.IsZero() {
			out.HarnContext.CompactedAt = api.NewTime(c.CompactedAt)
		}
	}
	for _, e := range r.Events {
		out.Events = append(out.Events, &api.AgentEvent{Type: e.Type, Task: e.Task, Step: int32(e.Step), Call: e.Call,
			Tool: e.Tool, Text: e.Text, Outcome: e.Outcome, Status: e.Status, Usage: usageToAPI(e.Usage), At: api.NewTime(e.At),
			Args: e.Args, Diff: e.Diff, Output: e.Output})
	}
	for _, st := range r.Steps {
		out.Steps = append(out.Steps, &api.TaskStep{Seq: st.Seq, At: api.NewTime(st.At), Kind: st.Kind, Name: st.Name, Call: st.Call,
			Outcome: st.Outcome, Level: st.Level, By: st.By, Reason: st.Reason, EstimatedInput: int32(min(st.Estimated, 1<<30)),
			Input: int32(min(st.Input, 1<<30)), Output: int32(min(st.Output, 1<<30)), InputDigest: st.InputDigest, OutputDigest: st.OutputDigest})
	}
	out.StepsOmitted = int32(min(r.StepsOmitted, 1<<30))
	for _, u := range r.Usage {
		out.Usage = append(out.Usage, &api.UsageRow{Key: u.Key, Model: u.Model, Calls: int32(u.Calls), EstimatedInput: int32(u.Estimated),
			Input: int32(u.Input), Output: int32(u.Output), CacheRead: int32(u.CacheRead), CacheWrite: int32(u.CacheWrite), Node: u.Node})
	}
	if s := r.Steer; s != nil {
		out.Steer = &api.SteerResult{Mode: string(s.Mode), Task: s.Task, Steered: s.Steered, Message: s.Message}
	}
	if g := r.Grants; g != nil {
		v := &api.GrantsView{Task: g.Task, Generation: g.Generation, Grants: GrantsToAPI(g.Grants)}
		for _, l := range g.Limits {
			v.Limits = append(v.Limits, &api.Limit{Capability: l.Capability, Level: l.Level.String(), Reason: l.Reason, At: api.NewTime(l.At)})
		}
		for _, h := range g.Ceiling {
			v.Ceiling = append(v.Ceiling, &api.Held{Capability: h.Capability, Kind: h.Kind.String(), Level: h.Level,
				Confirm: h.Confirm, Loaded: h.Loaded})
		}
		out.Grants = v
	}
	if h := r.Digest; h != nil {
		v := &api.Handoff{PredecessorFinal: h.PredecessorFinal}
		for _, m := range h.Conversation {
			v.Conversation = append(v.Conversation, &api.HandoffMessage{Role: m.Role, Task: m.Task, Text: m.Text})
		}
		if d := h.Digest; d != nil {
			c := d.Calls
			v.Digest = &api.HandoffDigest{Predecessor: d.Predecessor, Status: string(d.Status),
				Calls: &api.CallCounts{Started: int32(c.Started), Succeeded: int32(c.Succeeded), Failed: int32(c.Failed),
					Aborted: int32(c.Aborted), OutcomeUnknown: int32(c.Unknown), Refused: int32(c.Refused), Denied: int32(c.Denied)}}
			for _, cc := range d.Capabilities {
				v.Digest.Capabilities = append(v.Digest.Capabilities, &api.CapabilityCalls{Name: cc.Name, Calls: int32(cc.Calls)})
			}
		}
		out.Digest = v
	}
	if s := r.View; s != nil {
		v := &api.SessionView{Session: s.Session, Task: taskViewToAPI(s.Task), QueueDepth: int32(s.QueueDepth),
			Last: taskViewToAPI(s.Last), AwaitingAck: s.AwaitingAck}
		for i := range s.Queue {
			v.Queue = append(v.Queue, taskViewToAPI(&s.Queue[i]))
		}
		out.SessionView = v
	}
	return out
}

// ResultFromAPI reads a result from the wire.
func ResultFromAPI(r *api.TaskResult) (taskwire.Result, error) {
	if r == nil {
		return taskwire.Result{}, nil
	}
	out := taskwire.Result{Node: r.Node, Session: r.Session, Task: taskViewFromAPI(r.Task), Text: r.Text,
		Output: r.Output, Message: r.Message, Interrupt: r.Interrupt, Next: int(min(max(r.GetNext(), 0), 1<<40)),
		QueueText: r.GetQueueText(), Reopened: r.GetReopened()}
	if c := r.GetHarnContext(); c != nil {
		out.Context = &taskwire.ContextInfo{Used: int(c.GetUsed()), Budget: int(c.GetBudget()), Compaction: c.GetCompaction()}
		if c.GetCompactedAt() != nil {
			out.Context.CompactedAt = c.GetCompactedAt().AsTime()
		}
	}
	for _, e := range r.Events {
		out.Events = append(out.Events, runtime.LoopEvent{Type: e.GetType(), Task: e.GetTask(), Step: int(e.GetStep()), Call: e.GetCall(),
			Tool: e.GetTool(), Text: e.GetText(), Outcome: e.GetOutcome(), Status: e.GetStatus(), Usage: usageFromAPI(e.GetUsage()),
			At: e.GetAt().AsTime(), Args: e.GetArgs(), Diff: e.GetDiff(), Output: e.GetOutput()})
	}
	for _, st := range r.Steps {
		out.Steps = append(out.Steps, taskwire.Step{Seq: st.GetSeq(), At: st.GetAt().AsTime(), Kind: st.GetKind(), Name: st.GetName(), Call: st.GetCall(),
			Outcome: st.GetOutcome(), Level: st.GetLevel(), By: st.GetBy(), Reason: st.GetReason(), Estimated: int(st.GetEstimatedInput()),
			Input: int(st.GetInput()), Output: int(st.GetOutput()), InputDigest: st.GetInputDigest(), OutputDigest: st.GetOutputDigest()})
	}
	out.StepsOmitted = int(max(r.GetStepsOmitted(), 0))
	for _, u := range r.Usage {
		out.Usage = append(out.Usage, taskwire.UsageRow{Key: u.GetKey(), Model: u.GetModel(), Calls: int(u.GetCalls()), Estimated: int(u.GetEstimatedInput()),
			Input: int(u.GetInput()), Output: int(u.GetOutput()), CacheRead: int(u.GetCacheRead()), CacheWrite: int(u.GetCacheWrite()), Node: u.GetNode()})
	}
	if s := r.Steer; s != nil {
		out.Steer = &execwire.SteerResult{Mode: execwire.SteerMode(s.Mode), Task: s.Task, Steered: s.Steered, Message: s.Message}
	}
	if g := r.Grants; g != nil {
		gs, err := GrantsFromAPI(g.Grants)
		if err != nil {
			return out, err
		}
		v := &runtime.GrantsView{Task: g.Task, Generation: g.Generation, Grants: gs, Ceiling: []runtime.Held{}}
		for _, l := range g.Limits {
			var lv runtime.Level
			if err := lv.UnmarshalText([]byte(l.Level)); err != nil {
				return out, err
			}
			v.Limits = append(v.Limits, runtime.Limit{Capability: l.Capability, Level: lv, Reason: l.Reason, At: l.At.AsTime()})
		}
		for _, h := range g.Ceiling {
			var k runtime.Kind
			if err := k.UnmarshalText([]byte(h.Kind)); err != nil {
				return out, err
			}
			v.Ceiling = append(v.Ceiling, runtime.Held{Capability: h.Capability, Kind: k, Level: h.Level,
				Confirm: h.Confirm, Loaded: h.Loaded})
		}
		out.Grants = v
	}
	if h := r.Digest; h != nil {
		v := &runtime.Handoff{PredecessorFinal: h.PredecessorFinal, Conversation: []runtime.Message{}}
		for _, m := range h.Conversation {
			v.Conversation = append(v.Conversation, runtime.Message{Role: m.Role, Task: m.Task, Text: m.Text})
		}
		if d := h.Digest; d != nil {
			c := d.GetCalls()
			v.Digest = &runtime.Digest{Predecessor: d.Predecessor, Status: runtime.Status(d.Status),
				Calls: runtime.CallCounts{Started: int(c.GetStarted()), Succeeded: int(c.GetSucceeded()), Failed: int(c.GetFailed()),
					Aborted: int(c.GetAborted()), Unknown: int(c.GetOutcomeUnknown()), Refused: int(c.GetRefused()), Denied: int(c.GetDenied())}}
			for _, cc := range d.Capabilities {
				v.Digest.Capabilities = append(v.Digest.Capabilities, runtime.CapabilityCalls{Name: cc.Name, Calls: int(cc.Calls)})
			}
		}
		out.Digest = v
	}
	if s := r.SessionView; s != nil {
		v := &runtime.SessionView{Session: s.Session, Task: taskViewFromAPI(s.Task), QueueDepth: int(s.QueueDepth),
			Last: taskViewFromAPI(s.Last), AwaitingAck: s.AwaitingAck}
		for _, t := range s.Queue {
			v.Queue = append(v.Queue, *taskViewFromAPI(t))
		}
		out.View = v
	}
	return out, nil
}

func taskViewToAPI(t *runtime.TaskView) *api.TaskView {
	if t == nil {
		return nil
	}
	return &api.TaskView{Id: t.ID, Session: t.Session, Action: string(t.Action), State: string(t.State),
		Status: string(t.Status), QueueDepth: int32(t.QueueDepth), Position: int32(t.Position),
		RequiresSuccess: t.RequiresSuccess, Predecessor: t.Predecessor, PendingCalls: t.PendingCalls,
		CreatedAt: api.NewTime(t.CreatedAt), By: t.By, Reason: t.Reason, Refused: int32(min(t.Refused, 1<<30)),
		RefusedCalls: refusedToAPI(t.RefusedCalls)}
}

func refusedToAPI(rs []runtime.RefusedCall) []*api.RefusedCall {
	var out []*api.RefusedCall
	for _, r := range rs {
		out = append(out, &api.RefusedCall{Capability: r.Capability, Check: r.Check})
	}
	return out
}

func refusedFromAPI(rs []*api.RefusedCall) []runtime.RefusedCall {
	var out []runtime.RefusedCall
	for _, r := range rs {
		if len(out) == runtime.MaxRefusedCalls {
			break
		}
		out = append(out, runtime.RefusedCall{Capability: r.GetCapability(), Check: r.GetCheck()})
	}
	return out
}

func taskViewFromAPI(t *api.TaskView) *runtime.TaskView {
	if t == nil {
		return nil
	}
	return &runtime.TaskView{ID: t.Id, Session: t.Session, Action: runtime.Action(t.Action), State: runtime.State(t.State),
		Status: runtime.Status(t.Status), QueueDepth: int(t.QueueDepth), Position: int(t.Position),
		RequiresSuccess: t.RequiresSuccess, Predecessor: t.Predecessor, PendingCalls: t.PendingCalls,
		CreatedAt: t.CreatedAt.AsTime(), By: t.By, Reason: t.Reason, Refused: int(max(t.GetRefused(), 0)),
		RefusedCalls: refusedFromAPI(t.GetRefusedCalls())}
}

// RequestToAPI is a waiting request on the wire (its Key stays on the
// owner).
func RequestToAPI(r taskwire.Request) *api.PermissionRequest {
	out := &api.PermissionRequest{Id: r.ID, Session: r.Session, Node: r.Node, Agent: r.Agent, Tool: r.Tool,
		Summary: r.Summary, Opened: api.NewTime(r.Opened), Parent: r.Parent, Detail: r.Detail, Name: r.Name,
		Cwd: r.Cwd, Project: r.Project, Branch: r.Branch, SessionWide: r.SessionWide,
		Kind: r.Kind, Task: r.Task, Call: r.Call, Command: r.Command, CommandCut: r.CommandCut,
		Path: r.Path, Diff: r.Diff, DiffCut: r.DiffCut}
	if a := r.Answer; a != nil {
		out.Answer = &api.PermissionAnswer{Allow: a.Allow, By: a.By, Reason: a.Reason, At: api.NewTime(a.At), SessionWide: a.SessionWide}
	}
	return out
}

// RequestFromAPI reads a waiting request from the wire; its facts come
// bounded and stripped (Facts.Bounded), whoever sent them. A request
// without a kind is a permission request (a node that predates kinds).
func RequestFromAPI(r *api.PermissionRequest) taskwire.Request {
	if r == nil {
		return taskwire.Request{}
	}
	out := taskwire.Request{ID: r.Id, Session: r.Session, Node: r.Node, Agent: r.Agent, Tool: r.Tool,
		Summary: r.Summary, Opened: r.Opened.AsTime(), Parent: r.Parent, Detail: r.Detail, Name: r.Name,
		Project: r.Project, Branch: r.Branch, SessionWide: r.SessionWide,
		Kind: r.Kind, Task: r.Task, Call: r.Call,
		Facts: taskwire.Facts{Command: r.Command, CommandCut: r.CommandCut, Cwd: r.Cwd, Path: r.Path, Diff: r.Diff,
			DiffCut: r.DiffCut}.Bounded()}
	if out.Kind == "" {
		out.Kind = taskwire.KindPermission
	}
	if a := r.Answer; a != nil {
		out.Answer = &taskwire.Answer{Allow: a.Allow, By: a.By, Reason: a.Reason, At: a.At.AsTime(), SessionWide: a.SessionWide}
	}
	return out
}
