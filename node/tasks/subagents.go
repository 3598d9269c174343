package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/runtime/subagent"
	"github.com/harn-dev/harn/util/text"
)

// SubagentSpace is the keyspace of the child records and their validated
// handoffs, in the node's Pebble.
const SubagentSpace = "subagent"

// The attributes of the subagent events.
const (
	attrAgentType = "agent_type" // a child's profile, on subagent.start
	attrSubagent  = "subagent"   // the child, on its parent's narration
	attrProfile   = "profile"
	// ReasonSubagentLost ends a child the node's restart cut short, and
	// names it on its parent's trace.
	ReasonSubagentLost = "subagent_lost"
)

// subagentStore keeps the manager's records in a KV space.
type subagentStore struct{ kv KV }

// NewSubagentStore is the manager's Store on the node's KV.
func NewSubagentStore(kv KV) subagent.Store { return subagentStore{kv: kv} }

func (s subagentStore) Put(c subagent.Child) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if sk, ok := s.kv.(SyncKV); ok { // a start must survive a kill -9: the next run reports it lost
		return sk.PutKVSync(SubagentSpace, []byte(c.ID), b)
	}
	return s.kv.PutKV(SubagentSpace, []byte(c.ID), b)
}

func (s subagentStore) Scan(fn func(subagent.Child) error) error {
	var bad int
	err := s.kv.ScanKV(SubagentSpace, nil, func(_, val []byte) error {
		var c subagent.Child
		if err := json.Unmarshal(val, &c); err != nil || c.ID == "" {
			bad++
			return nil
		}
		return fn(c)
	})
	if err == nil && bad > 0 {
		err = fmt.Errorf("tasks: %d unreadable subagent records skipped", bad)
	}
	return err
}

// kidStart is how openHarn starts a child: its spec, and its first task
// started (with the child's grants) before the loop runs.
type kidStart struct {
	spec  subagent.Spec
	first func(id string, specs []tools.Spec) error
}

// childRunner runs the manager's children as harn sessions of this node.
type childRunner struct {
	h      *Host
	mu     sync.Mutex
	grants map[string][]runtime.Grant // child -> the grants of its tasks
}

var _ subagent.Runner = (*childRunner)(nil)

// Start opens the child's harn session with its parent's provider and
// model (or its profile's model), its profile's tools and prompt, and
// starts its task with grants at most its parent's.
func (r *childRunner) Start(s subagent.Spec) error {
	h := r.h
	p := h.lookup(s.Child.Parent)
	if p == nil || p.harn == nil {
		return fmt.Errorf("%w: parent %s is not a harn session of this node", ErrNoSession, s.Child.Parent)
	}
	pg, err := h.rt.Grants(s.Child.ParentTask)
	if err != nil {
		return fmt.Errorf("the parent's grants: %w", err)
	}
	o := p.opts
	if s.Profile.Model != "" {
		o.Model, o.ContextWindow, o.MaxOutput = s.Profile.Model, 0, 0
	}
	kid := &kidStart{spec: s, first: func(id string, specs []tools.Spec) error {
		names := make([]string, len(specs))
		for i, sp := range specs {
			names[i] = sp.Name
		}
		g := subagent.ChildGrants(pg, names, s.Profile)
		r.mu.Lock()
		if r.grants == nil {
			r.grants = map[string][]runtime.Grant{}
		}
		r.grants[id] = g
		r.mu.Unlock()
		v, err := h.rt.Start(id, runtime.Request{Text: clip(s.Prompt), Grants: g, By: "subagent of " + s.Child.Parent})
		if err != nil {
			return err
		}
		h.remember(v.ID, s.Prompt)
		return nil
	}}
	_, err = h.openHarn(o, p.workdir, kid)
	return err
}

// Ask sends the child a follow-up with the same grants.
func (r *childRunner) Ask(child, msg string) error {
	r.mu.Lock()
	g, ok := r.grants[child]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: child %s", ErrNoSession, child)
	}
	v, err := r.h.rt.FollowUp(child, runtime.Request{Text: msg, Grants: g, By: "subagent manager"})
	if err == nil {
		r.h.remember(v.ID, msg)
	}
	return err
}

// reduceChildren carries a reduction of task to the children it spawned,
// so that a child never holds more than its parent: a child started later
// takes the parent's grants with the limit (Start), a running one is
// reduced here.
func (h *Host) reduceChildren(task, pattern string, level runtime.Level, by, reason string) {
	tv, err := h.rt.Task(task)
	if err != nil || h.subs == nil || h.kids == nil {
		return
	}
	for _, c := range h.subs.Children(tv.Session) {
		if c.ParentTask == task {
			h.kids.reduce(c.ID, pattern, level, by, reason)
		}
	}
}

// reduce caps child's grants at level for the capabilities pattern
// covers: the grants its follow-ups take (Ask), and its running task's.
// A pattern-bound grant capped below execute is dropped, as ChildGrants
// drops it; the handoff tool stays.
func (r *childRunner) reduce(child, pattern string, level runtime.Level, by, reason string) {
	var caps []string
	r.mu.Lock()
	if g, ok := r.grants[child]; ok {
		out := make([]runtime.Grant, 0, len(g))
		for _, x := range g {
			if x.Capability != subagent.ToolHandoff && x.Level > level && subagent.CapabilityMatch(pattern, x.Capability) {
				caps = append(caps, x.Capability)
				if x.Match != "" || level == runtime.LevelNone {
					continue
				}
				x.Level, x.Confirm = level, false
			}
			out = append(out, x)
		}
		r.grants[child] = out
	}
	r.mu.Unlock()
	task, ok := r.h.rt.ActiveTask(child)
	if !ok {
		return
	}
	slices.Sort(caps)
	for _, c := range slices.Compact(caps) {
		err := r.h.rt.ReduceBy(task, c, level, by, reason)
		var ce *runtime.CeilingError
		if err != nil && !errors.Is(err, runtime.ErrTaskTerminal) && !errors.As(err, &ce) {
			r.h.log.Warn("subagent: reduce the child with its parent", "child", child, "capability", c, "err", err)
		}
	}
}

// Cancel cancels the child's active task.
func (r *childRunner) Cancel(child, reason string) error {
	task, ok := r.h.rt.ActiveTask(child)
	if !ok {
		return nil
	}
	_, err := r.h.rt.Cancel(task, "subagent manager", text.Clip(reason, runtime.MaxReasonBytes))
	if errors.Is(err, runtime.ErrTaskTerminal) {
		return nil
	}
	return err
}

// Close announces the child's end (subagent.stop, with its outcome) and
// stops its loop.
func (r *childRunner) Close(c subagent.Child) {
	h := r.h
	if err := h.emit(presence.Event{SessionID: c.ID, ParentSessionID: c.Parent, Type: presence.TypeSubagentStop,
		TS: h.cfg.Clock.Now(), Agent: Agent, Attrs: map[string]any{presence.AttrReason: "handoff_" + string(c.Outcome),
			attrAgentType: c.Profile}}); err != nil {
		h.log.Warn("subagent stop event", "child", c.ID, "err", err)
	}
	r.mu.Lock()
	delete(r.grants, c.ID)
	r.mu.Unlock()
	if hs := h.lookup(c.ID); hs != nil && hs.cancel != nil {
		hs.cancel()
	}
	h.changed(c.Parent)
}

// Subagents is the node's subagent manager.
func (h *Host) Subagents() *subagent.Manager { return h.subs }

// RecoverSubagents is called once at start, after Recover: every child
// the previous run left queued or running is recorded lost, never
// resumed, and said so on its parent's trace (a narration naming the
// child) and in the roster (the child's session ends with reason
// subagent_lost).
func (h *Host) RecoverSubagents() ([]subagent.Child, error) {
	lost, err := h.subs.Recover()
	now := h.cfg.Clock.Now()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, c := range lost {
		summary := text.Clip("subagent "+c.ID+" ("+c.Profile+") lost: "+subagent.ReasonLost+"; brief: "+text.OneLine(c.Brief), 400)
		evs := []presence.Event{
			{SessionID: c.Parent, Type: presence.TypeNarration, TS: now, Agent: Agent,
				Attrs: map[string]any{attrSubagent: c.ID, attrProfile: c.Profile, presence.AttrReason: ReasonSubagentLost,
					presence.AttrSummary: summary}},
			{SessionID: c.ID, ParentSessionID: c.Parent, Type: presence.TypeSubagentStop, TS: now, Agent: Agent,
				Attrs: map[string]any{presence.AttrReason: ReasonSubagentLost, attrAgentType: c.Profile}},
		}
		if err := h.emit(evs...); err != nil {
			errs = append(errs, fmt.Errorf("tasks: report lost subagent %s: %w", c.ID, err))
		}
	}
	return lost, errors.Join(errs...)
}
