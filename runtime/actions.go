package runtime

import (
	"context"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Request is an operator's input for a new task. Grants nil means the
// session's grants (what its first task was given), or the runtime's
// default profile for a session's first task; grants named must be within
// the session's. RequiresSuccess applies to a follow-up: after
// a failed, cancelled or superseded predecessor it stays blocked until
// Resume, Cancel or Replace.
type Request struct {
	Text            string
	Grants          []Grant
	RequiresSuccess bool
	// By names who submitted the task (recorded in its task.submit
	// record and shown in its view); clipped to MaxByBytes.
	By string
}

// clipBy cuts by to MaxByBytes at a rune boundary.
func clipBy(by string) string {
	if len(by) <= MaxByBytes {
		return by
	}
	cut := MaxByBytes
	for cut > 0 && !utf8.RuneStart(by[cut]) {
		cut--
	}
	return by[:cut]
}

func checkText(s string) error {
	if s == "" {
		return ErrEmptyText
	}
	if len(s) > MaxTextBytes {
		return fmt.Errorf("%w: text of %d bytes, over %d", ErrTooLarge, len(s), MaxTextBytes)
	}
	return nil
}

func checkAnswer(by, reason string) error {
	if len(by) > MaxByBytes || len(reason) > MaxReasonBytes {
		return fmt.Errorf("%w: by over %d or reason over %d bytes", ErrTooLarge, MaxByBytes, MaxReasonBytes)
	}
	return nil
}

// grantsOf is the grants of a new task of s (locked): the request's, which
// must be within the session's, else the session's; a session's first task
// fixes the session's grants (the request's, or the runtime's default).
// The ceiling can shrink during a task but never grow, and a session's
// tasks never hold more than the session was given.
func (rt *Runtime) grantsOf(s *session, req *Request) ([]Grant, error) {
	if req.Grants == nil {
		if s.grants != nil {
			return slices.Clone(s.grants), nil
		}
		return slices.Clone(rt.defGrants), nil
	}
	for _, g := range req.Grants {
		if err := g.validate(); err != nil {
			return nil, err
		}
	}
	if s.grants != nil {
		if g, ok := Within(req.Grants, s.grants); !ok {
			return nil, &GrantsBeyondError{Session: s.id, Grant: g}
		}
	}
	return slices.Clone(req.Grants), nil
}

// submit creates a task, records it and places it: at the head (running
// or blocked) when the session is idle, else in the queue (first when
// front is true). The session is locked.
func (rt *Runtime) submit(s *session, action Action, req Request, front bool) (*task, error) {
	if err := checkText(req.Text); err != nil {
		return nil, err
	}
	grants, err := rt.grantsOf(s, &req)
	if err != nil {
		return nil, err
	}
	t := rt.newTask(s, action, req.Text, grants, req.RequiresSuccess && action == ActionFollowUp)
	t.by = clipBy(req.By)
	t.submitted = s.base + len(s.conv)
	if err := rt.rec(t, Record{Kind: RecSubmit, Status: string(action), By: t.by}); err != nil {
		return nil, err
	}
	if s.grants == nil {
		s.grants = slices.Clone(grants) // the session's first task: what the session was given
	}
	rt.index(t)
	s.say("user", t.id, t.text)
	defer func() {
		if t.after != nil {
			t.afterID = t.after.id
		}
	}()
	switch {
	case s.head == nil && len(s.queue) == 0:
		rt.startLocked(s, t, nil)
	case front:
		t.queued, t.after = true, s.head
		s.queue = append([]*task{t}, s.queue...)
	default:
		t.queued, t.after = true, s.head
		if len(s.queue) > 0 {
			t.after = s.queue[len(s.queue)-1]
		}
		s.queue = append(s.queue, t)
	}
	s.signal()
	return t, nil
}

// Start creates a task when no task is active, or returns ErrTaskActive.
func (rt *Runtime) Start(sessionID string, req Request) (TaskView, error) {
	s, err := rt.session(sessionID)
	if err != nil {
		return TaskView{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head != nil || len(s.queue) > 0 {
		id := ""
		if s.head != nil {
			id = s.head.id
		}
		return TaskView{}, fmt.Errorf("%w: %s", ErrTaskActive, id)
	}
	t, err := rt.submit(s, ActionStart, req, false)
	if err != nil {
		return TaskView{}, err
	}
	return t.view(), nil
}

// Steer adds input to the running task.
func (rt *Runtime) Steer(sessionID, text string) (TaskView, error) {
	s, err := rt.session(sessionID)
	if err != nil {
		return TaskView{}, err
	}
	if err := checkText(text); err != nil {
		return TaskView{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.head
	switch {
	case t == nil || t.state == StateBlocked:
		return TaskView{}, ErrNoActiveTask
	case t.state != StateRunning:
		return TaskView{}, fmt.Errorf("%w: %s is %s", ErrTaskCancelling, t.id, t.state)
	}
	t.steers = append(t.steers, text)
	s.say("user", t.id, text)
	t.poke()
	s.signal()
	return t.view(), nil
}

// FollowUp queues a task behind the active one (or starts it when the
// session is idle).
func (rt *Runtime) FollowUp(sessionID string, req Request) (TaskView, error) {
	s, err := rt.session(sessionID)
	if err != nil {
		return TaskView{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := rt.submit(s, ActionFollowUp, req, false)
	if err != nil {
		return TaskView{}, err
	}
	return t.view(), nil
}

// Supersede cancels the session's current task (running, or blocked) and
// places the replacement first in the queue; it starts only once the
// cancelled task has passed the barrier. A replacement still waiting from
// an earlier Supersede is itself superseded. In an idle session it starts
// at once.
func (rt *Runtime) Supersede(sessionID string, req Request) (TaskView, error) {
	s, err := rt.session(sessionID)
	if err != nil {
		return TaskView{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkText(req.Text); err != nil {
		return TaskView{}, err
	}
	var kept []Limit // the reductions of an earlier replacement this one supersedes
	if len(s.queue) > 0 && s.queue[0].action == ActionSupersede && s.head != nil && s.head.state != StateRunning {
		kept = slices.Clone(s.queue[0].limits)
		rt.endUnstarted(s, s.queue[0], StatusSuperseded, 0)
	}
	t, err := rt.submit(s, ActionSupersede, req, true)
	if err != nil {
		return TaskView{}, err
	}
	if h := s.head; h != nil && h != t {
		// The replacement keeps the operator's reductions of the task it
		// replaces (merged when it starts, so that a reduction made during
		// the barrier counts too).
		t.inherit = h
		t.limits = append(t.limits, kept...)
		switch h.state {
		case StateRunning:
			rt.cancelLocked(h, StatusSuperseded, "", "superseded by "+t.id)
		case StateBlocked:
			rt.endBlocked(h, StatusSuperseded)
		}
	}
	return t.view(), nil
}

// Resume starts a blocked follow-up.
func (rt *Runtime) Resume(taskID string) (TaskView, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return TaskView{}, err
	}
	s := t.s
	defer s.mu.Unlock()
	if t.state != StateBlocked {
		return TaskView{}, fmt.Errorf("%w: %s is %s", ErrNotBlocked, t.id, t.state)
	}
	rt.startLocked(s, t, s.last)
	s.signal()
	return t.view(), nil
}

// Cancel cancels a task: a running one goes through the barrier; a queued
// or blocked one ends at once. Cancelling a task already cancelling is a
// no-op.
func (rt *Runtime) Cancel(taskID, by, reason string) (TaskView, error) {
	if err := checkAnswer(by, reason); err != nil {
		return TaskView{}, err
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return TaskView{}, err
	}
	s := t.s
	defer s.mu.Unlock()
	switch t.state {
	case StateTerminal:
		return TaskView{}, fmt.Errorf("%w: %s %s", ErrTaskTerminal, t.id, t.status)
	case StateRunning:
		rt.cancelLocked(t, StatusCancelled, by, reason)
	case StateQueued:
		rt.endUnstarted(s, t, StatusCancelled, indexOf(s.queue, t))
	case StateBlocked:
		rt.endBlocked(t, StatusCancelled)
	}
	return t.view(), nil
}

// Replace ends a queued or blocked task as superseded and puts a new task
// with text in its place, with the same grants. A blocked task's
// replacement starts at once; a queued one's keeps its place and its
// RequiresSuccess.
func (rt *Runtime) Replace(taskID, text string) (TaskView, error) {
	if err := checkText(text); err != nil {
		return TaskView{}, err
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return TaskView{}, err
	}
	s := t.s
	defer s.mu.Unlock()
	if t.state != StateQueued && t.state != StateBlocked {
		return TaskView{}, fmt.Errorf("%w: %s is %s", ErrNotReplaceable, t.id, t.state)
	}
	n := rt.newTask(s, ActionReplace, text, slices.Clone(t.grants), t.requiresSuccess && t.state == StateQueued)
	n.limits, n.inherit = slices.Clone(t.limits), t.inherit // a replacement keeps the reductions
	n.submitted = s.base + len(s.conv)
	n.queued, n.after, n.afterID = true, t.after, t.afterID
	if err := rt.rec(n, Record{Kind: RecSubmit, Status: string(ActionReplace), Reason: "replaces " + t.id}); err != nil {
		return TaskView{}, err
	}
	rt.index(n)
	s.say("user", n.id, text)
	for _, q := range s.queue { // who depended on t now depends on its replacement
		if q.after == t {
			q.after, q.afterID = n, n.id
		}
	}
	if t.state == StateQueued {
		i := indexOf(s.queue, t)
		s.queue[i] = n
		rt.finishUnstarted(t, StatusSuperseded)
	} else {
		s.head = nil
		rt.finishUnstarted(t, StatusSuperseded)
		rt.startLocked(s, n, s.last)
	}
	s.signal()
	return n.view(), nil
}

func indexOf(q []*task, t *task) int {
	for i, x := range q {
		if x == t {
			return i
		}
	}
	return -1
}

// endUnstarted removes queue[i] and ends it with status.
func (rt *Runtime) endUnstarted(s *session, t *task, status Status, i int) {
	if i >= 0 && i < len(s.queue) && s.queue[i] == t {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
	rt.finishUnstarted(t, status)
	s.signal()
}

// finishUnstarted ends a task that never ran; it does not become anyone's
// predecessor.
func (rt *Runtime) finishUnstarted(t *task, status Status) {
	t.state, t.status, t.after = StateTerminal, status, nil
	rt.recLog(t, Record{Kind: RecState, State: StateTerminal, Status: string(status)})
	rt.retire(t.s, t)
}

// endBlocked ends the blocked head task; the next queued task sees it as
// its predecessor.
func (rt *Runtime) endBlocked(t *task, status Status) {
	t.status = status
	rt.endLocked(t)
}

// advance fills an empty head from the queue: a follow-up that requires
// success, queued behind a task that did not succeed (failed, cancelled or
// superseded, even before it ran), is blocked; anything else starts.
func (rt *Runtime) advance(s *session) {
	if s.head != nil || len(s.queue) == 0 {
		return
	}
	t := s.queue[0]
	s.queue = s.queue[1:]
	s.head = t
	if dep := t.after; t.requiresSuccess && dep != nil && dep.status != StatusSucceeded {
		t.state = StateBlocked
		rt.recLog(t, Record{Kind: RecState, State: StateBlocked, Reason: "predecessor " + dep.id + " " + string(dep.status)})
		s.signal()
		return
	}
	rt.startLocked(s, t, s.last)
	s.signal()
}

// startLocked makes t the running head: a fresh snapshot of the catalog
// (with its generation), provider bindings, grants and capability context,
// and for a successor its handoff.
func (rt *Runtime) startLocked(s *session, t *task, pred *task) {
	s.head = t
	if r := s.refusing; r != nil { // a new task governs the session's calls
		rt.recLog(r, Record{Kind: RecLift, Reason: "task " + t.id + " started"})
		s.refusing = nil
	}
	g := rt.global.Load()
	t.snap = g.catalogs[s.cfg.Catalog]
	if t.snap == nil {
		t.snap, _ = newCatalog(s.cfg.Catalog, 0, nil)
	}
	t.loaded, t.skillsTask, t.skillsStep = map[string]int{}, map[string]int{}, map[string]int{}
	t.calls, t.perCap = map[string]*call{}, map[string]int{}
	for i := range t.snap.list {
		if c := &t.snap.list[i]; c.Core && c.Kind == KindTool {
			t.loaded[c.Name] = 0 // in the budget's Base, not charged again
		}
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.notify = make(chan struct{}, 1)
	t.state = StateRunning
	if t.queued && pred != nil {
		t.pred = pred
	}
	t.handoff = rt.handoffFor(s, t, g)
	t.after, t.pred = nil, nil // keep no chain of ended tasks alive
	rt.recLog(t, Record{Kind: RecState, State: StateRunning})
	rt.inheritLimits(t)
}

// poke wakes the task's executor (a steer, a cancellation).
func (t *task) poke() {
	if t.notify == nil {
		return
	}
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// Ack acknowledges the unknown outcomes of a task's mutating calls, so
// that new mutations may run again.
func (rt *Runtime) Ack(taskID, by string) error {
	if err := checkAnswer(by, ""); err != nil {
		return err
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return err
	}
	s := t.s
	defer s.mu.Unlock()
	keep := s.holds[:0]
	n := 0
	for _, h := range s.holds {
		if h.task == t.id {
			n++
			continue
		}
		keep = append(keep, h)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", ErrNothingToAck, t.id)
	}
	if err := rt.rec(t, Record{Kind: RecAck, By: by}); err != nil {
		return err
	}
	s.holds = keep
	s.signal()
	return nil
}

// Reduce shrinks a task's ceiling: the capabilities matching pattern hold
// at most level from now on. Asking a level above what a matching
// capability holds is refused (CeilingError): the ceiling never grows.
func (rt *Runtime) Reduce(taskID, pattern string, level Level, reason string) error {
	return rt.ReduceBy(taskID, pattern, level, "", reason)
}

// ReduceBy is Reduce naming the operator who asked, for the ledger.
func (rt *Runtime) ReduceBy(taskID, pattern string, level Level, by, reason string) error {
	if err := (Grant{Level: Discover, Capability: pattern}).validate(); err != nil {
		return err
	}
	if level > Execute {
		return fmt.Errorf("%w: level %d", ErrGrantSyntax, level)
	}
	if err := checkAnswer(by, reason); err != nil {
		return err
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return err
	}
	s := t.s
	defer s.mu.Unlock()
	if t.state == StateTerminal {
		return fmt.Errorf("%w: %s", ErrTaskTerminal, t.id)
	}
	for _, c := range rt.catalogOf(t).list {
		if !nameMatch(pattern, c.Name) {
			continue
		}
		if held := heldLevel(t.grants, t.limits, &c); level > held {
			return &CeilingError{Capability: c.Name, Held: held, Asked: level}
		}
	}
	l := Limit{Capability: pattern, Level: level, Reason: reason, At: rt.clock.Now().UTC()}
	if err := rt.rec(t, Record{Kind: RecReduce, Capability: pattern, Level: level.String(), By: by, Reason: reason}); err != nil {
		return err
	}
	t.limits = append(t.limits, l)
	s.signal()
	return nil
}

// inheritLimits merges the reductions of the task t replaces into its own
// (a replacement never regains what the operator took away), and records
// each in t's ledger.
func (rt *Runtime) inheritLimits(t *task) {
	p := t.inherit
	t.inherit = nil
	if p == nil {
		return
	}
	for _, l := range p.limits {
		t.limits = append(t.limits, l)
		rt.recLog(t, Record{Kind: RecReduce, Capability: l.Capability, Level: l.Level.String(),
			Reason: "kept from " + p.id})
	}
}

// heldLevel is the most a capability holds under any input.
func heldLevel(grants []Grant, limits []Limit, c *Capability) Level {
	var lvl Level
	for _, g := range grants {
		if nameMatch(g.Capability, c.Name) {
			lvl = max(lvl, g.Level)
		}
	}
	for _, l := range limits {
		if nameMatch(l.Capability, c.Name) {
			lvl = min(lvl, l.Level)
		}
	}
	if c.Kind == KindSkill {
		lvl = min(lvl, Activate)
	}
	return lvl
}

// catalogOf is the task's snapshot, or the session's live catalog for a
// task that has not started.
func (rt *Runtime) catalogOf(t *task) *catalog {
	if t.snap != nil {
		return t.snap
	}
	if c := rt.global.Load().catalogs[t.s.cfg.Catalog]; c != nil {
		return c
	}
	c, _ := newCatalog(t.s.cfg.Catalog, 0, nil)
	return c
}

// Held is one capability's current ceiling in a task.
type Held struct {
	Capability string `json:"capability"`
	Kind       Kind   `json:"kind"`
	Level      string `json:"level"`
	Confirm    bool   `json:"confirm,omitempty"`
	Loaded     bool   `json:"loaded,omitempty"`
}

// GrantsView is what a task holds now: its grants, the reductions since it
// was created, and the resulting ceiling per catalog capability.
type GrantsView struct {
	Task       string  `json:"task"`
	Generation uint64  `json:"generation"`
	Grants     []Grant `json:"grants"`
	Limits     []Limit `json:"limits,omitempty"`
	Ceiling    []Held  `json:"ceiling"`
}

// Grants returns what a task holds now.
func (rt *Runtime) Grants(taskID string) (GrantsView, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return GrantsView{}, err
	}
	defer t.s.mu.Unlock()
	cat := rt.catalogOf(t)
	v := GrantsView{Task: t.id, Generation: cat.gen, Grants: slices.Clone(t.grants), Limits: slices.Clone(t.limits), Ceiling: []Held{}}
	for i := range cat.list {
		c := &cat.list[i]
		lvl := heldLevel(t.grants, t.limits, c)
		_, confirm := ceiling(t.grants, t.limits, c, "", modeAny, t.s.cfg.Workdir)
		_, loaded := t.loaded[c.Name]
		if !loaded {
			_, loaded = t.skillsTask[c.Name]
		}
		v.Ceiling = append(v.Ceiling, Held{Capability: c.Name, Kind: c.Kind, Level: lvl.nameFor(c.Kind), Confirm: confirm, Loaded: loaded})
	}
	return v, nil
}
