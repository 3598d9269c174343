package subagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/ids"
	"github.com/harn-dev/harn/util/text"
)

// Config builds a Manager.
type Config struct {
	Runner Runner // required
	Store  Store  // required
	Clock  clock.Clock
	Logger *slog.Logger
	// Profiles gives the profiles of a parent's working directory; default
	// the built-ins alone (a project's profiles load only where its
	// caller has checked the project's trust).
	Profiles func(workdir string) (map[string]Profile, error)
	// MaxRunning and MaxQueued override the limits (tests); zero means
	// the constants.
	MaxRunning, MaxQueued, MaxNodeQueued int
}

// Manager coordinates the children of the node's harn sessions. It is safe
// for concurrent use.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	closed  bool
	live    map[string]*live
	order   []string       // ended children, oldest first, to bound live
	running map[string]int // parent -> running children
	queued  map[string]int // parent -> queued requests
	nodeRun int
	queue   []*live // queued, in arrival order
}

// live is a child the manager knows in this run.
type live struct {
	c        Child
	profile  Profile
	prompt   string
	done     chan struct{} // closed when c has its outcome
	cancel   string        // a cancellation was asked: why
	settling bool
}

// New checks cfg and builds a Manager; it does no I/O.
func New(cfg Config) (*Manager, error) {
	if cfg.Runner == nil || cfg.Store == nil {
		return nil, fmt.Errorf("%w: a runner and a store are required", ErrBadRequest)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Profiles == nil {
		cfg.Profiles = func(string) (map[string]Profile, error) { return Builtins(), nil }
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = MaxRunning
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = MaxQueued
	}
	if cfg.MaxNodeQueued <= 0 {
		cfg.MaxNodeQueued = MaxNodeQueued
	}
	return &Manager{cfg: cfg, log: cfg.Logger, live: map[string]*live{}, running: map[string]int{}, queued: map[string]int{}}, nil
}

// Request asks for one child.
type Request struct {
	Parent     string // the parent session (required)
	ParentTask string
	Call       string // the parent's agent call
	Profile    string // a profile name (required)
	Brief      string // the explicit task brief (required)
	Workdir    string // the parent's working directory: its project's profiles
}

// Recover is called once at start, before any Spawn: every record the
// previous run left queued or running is ended as lost (never resumed)
// and returned, so that the node tells each parent which children it
// lost.
func (m *Manager) Recover() ([]Child, error) {
	var open []Child
	err := m.cfg.Store.Scan(func(c Child) error {
		if c.State != StateEnded {
			open = append(open, c)
		}
		return nil
	})
	now := m.cfg.Clock.Now()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for i := range open {
		c := &open[i]
		c.State, c.Outcome, c.Reason, c.Ended = StateEnded, OutcomeLost, ReasonLost, now
		if err := m.cfg.Store.Put(*c); err != nil {
			errs = append(errs, err)
		}
	}
	sort.Slice(open, func(i, j int) bool {
		if !open[i].Created.Equal(open[j].Created) {
			return open[i].Created.Before(open[j].Created)
		}
		return open[i].ID < open[j].ID
	})
	return open, errors.Join(errs...)
}

// Spawn takes a request: the child starts now when its parent and the
// node are under MaxRunning, else it waits for a slot (queued), else the
// request is refused with a *BusyError. It returns the child's id; Wait
// gives its result.
func (m *Manager) Spawn(req Request) (string, error) {
	req.Profile = strings.TrimSpace(req.Profile)
	switch {
	case req.Parent == "":
		return "", fmt.Errorf("%w: no parent session", ErrBadRequest)
	case strings.TrimSpace(req.Brief) == "":
		return "", fmt.Errorf("%w: the brief is empty; say what the child is to do", ErrBadRequest)
	case len(req.Brief) > MaxBriefBytes:
		return "", fmt.Errorf("%w: a brief of %d bytes, over %d", ErrBadRequest, len(req.Brief), MaxBriefBytes)
	}
	profs, perr := m.cfg.Profiles(req.Workdir)
	p, ok := profs[req.Profile]
	if !ok {
		names := make([]string, 0, len(profs))
		for n := range profs {
			names = append(names, n)
		}
		sort.Strings(names)
		note := ""
		if perr != nil {
			note = " (" + text.Clip(text.OneLine(perr.Error()), 300) + ")"
		}
		return "", fmt.Errorf("%w: unknown profile %q; use one of: %s%s", ErrProfile, text.Clip(req.Profile, 64), strings.Join(names, ", "), note)
	}
	now := m.cfg.Clock.Now()
	l := &live{profile: p, prompt: promptOf(p, req.Brief), done: make(chan struct{}),
		c: Child{ID: "sa-" + ids.New(now), Parent: req.Parent, ParentTask: req.ParentTask, Call: req.Call,
			Profile: p.Name, Brief: req.Brief, Workdir: req.Workdir, Created: now}}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return "", ErrClosed
	}
	start := m.running[req.Parent] < m.cfg.MaxRunning && m.nodeRun < m.cfg.MaxRunning
	if !start && (m.queued[req.Parent] >= m.cfg.MaxQueued || len(m.queue) >= m.cfg.MaxNodeQueued) {
		e := &BusyError{Parent: req.Parent, Running: m.running[req.Parent], Node: m.nodeRun, Queued: m.queued[req.Parent]}
		m.mu.Unlock()
		return "", e
	}
	if start {
		l.c.State, l.c.Started = StateRunning, now
		m.running[req.Parent]++
		m.nodeRun++
	} else {
		l.c.State = StateQueued
		m.queued[req.Parent]++
		m.queue = append(m.queue, l)
	}
	m.live[l.c.ID] = l
	err := m.cfg.Store.Put(l.c)
	m.mu.Unlock()
	if err != nil {
		m.log.Warn("subagent: record not stored", "child", l.c.ID, "err", err)
	}
	if start {
		m.start(l)
	}
	return l.c.ID, nil
}

// promptOf is a child's first task text: the profile's skills as /name
// activations, then the brief.
func promptOf(p Profile, brief string) string {
	if len(p.Skills) == 0 {
		return brief
	}
	var b strings.Builder
	for _, s := range p.Skills {
		b.WriteString("/" + s + " ")
	}
	b.WriteString("\n\n")
	b.WriteString(brief)
	return b.String()
}

// start asks the runner to start a child marked running.
func (m *Manager) start(l *live) {
	m.mu.Lock()
	spec := Spec{Child: l.c, Profile: l.profile, Prompt: l.prompt}
	m.mu.Unlock()
	if err := m.cfg.Runner.Start(spec); err != nil {
		m.log.Warn("subagent: child not started", "child", spec.Child.ID, "err", err)
		m.mu.Lock()
		next := m.settleLocked(l, OutcomeFailed, "not started: "+text.Clip(text.OneLine(err.Error()), 300))
		m.mu.Unlock()
		m.after(l, next)
		return
	}
	m.mu.Lock()
	why := l.cancel
	m.mu.Unlock()
	if why != "" { // cancelled while it started
		_ = m.cfg.Runner.Cancel(spec.Child.ID, why)
	}
}

// Wait waits for a child's outcome. When ctx ends first the child is
// cancelled (the parent stopped waiting) and ctx's error returned.
func (m *Manager) Wait(ctx context.Context, id string) (Result, error) {
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l == nil {
		return Result{}, fmt.Errorf("%w: %s", ErrNoChild, id)
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		_ = m.Cancel(id, "the parent stopped waiting")
		return Result{}, ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return ResultOf(l.c), nil
}

// Done is closed when the child has its outcome.
func (m *Manager) Done(id string) (<-chan struct{}, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.live[id]
	if l == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoChild, id)
	}
	return l.done, nil
}

// Get returns a child's record as the manager has it now.
func (m *Manager) Get(id string) (Child, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.live[id]
	if l == nil {
		return Child{}, fmt.Errorf("%w: %s", ErrNoChild, id)
	}
	return l.c, nil
}

// Children lists a parent's children of this run (empty parent: every
// child), oldest first.
func (m *Manager) Children(parent string) []Child {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Child
	for _, l := range m.live {
		if parent == "" || l.c.Parent == parent {
			out = append(out, l.c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// IsChild reports whether session is a child of this run, and its parent.
func (m *Manager) IsChild(session string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.live[session]; l != nil {
		return l.c.Parent, true
	}
	return "", false
}

// Running is how many children run now: the parent's and the node's.
func (m *Manager) Running(parent string) (int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running[parent], m.nodeRun
}

// Cancel stops a child: a queued one ends at once, a running one when its
// task ends (cancelled, unless it had already handed off).
func (m *Manager) Cancel(id, reason string) error {
	m.mu.Lock()
	l := m.live[id]
	switch {
	case l == nil:
		m.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNoChild, id)
	case l.c.State == StateEnded || l.settling:
		m.mu.Unlock()
		return nil
	case l.c.State == StateQueued:
		next := m.settleLocked(l, OutcomeCancelled, reason)
		m.mu.Unlock()
		m.after(l, next)
		return nil
	}
	if l.cancel == "" {
		l.cancel = text.Clip(reason, 300)
	}
	m.mu.Unlock()
	return m.cfg.Runner.Cancel(id, reason)
}

// CancelParent cancels every child of a parent (its session ended).
func (m *Manager) CancelParent(parent, reason string) {
	for _, c := range m.Children(parent) {
		if c.State != StateEnded {
			_ = m.Cancel(c.ID, reason)
		}
	}
}

// HandoffAccepted and HandoffRejected are the handoff tool's answers.
const (
	HandoffAccepted = "handoff recorded for the parent; end your turn now with one short line"
	HandoffRejected = "the handoff was marked invalid after a second invalid attempt; end your turn now"
	handoffAgain    = "call handoff once more with every required field; a second invalid handoff is final"
)

// Handoff takes a child's handoff tool call: a valid one is recorded (the
// outcome once the child's task ends); the first invalid one is refused
// with the reasons and asked for once more; the second is final and the
// child is marked invalid. isErr says the answer is a refusal.
func (m *Manager) Handoff(id string, raw []byte) (answer string, isErr bool) {
	h, verr := ParseHandoff(raw)
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.live[id]
	switch {
	case l == nil:
		return fmt.Sprintf("no child %s on this node", text.Clip(id, 64)), true
	case l.c.State == StateEnded || l.settling:
		return "this child has already ended", true
	case l.c.Outcome != "":
		return "the handoff is already recorded; end your turn now", true
	case verr == nil:
		l.c.Handoff, l.c.Outcome = &h, OutcomeValid
		m.put(l.c)
		return HandoffAccepted, false
	case !l.c.Asked:
		l.c.Asked = true
		m.put(l.c)
		return verr.Error() + "; " + handoffAgain, true
	}
	l.c.Outcome, l.c.Reason = OutcomeInvalid, text.Clip(verr.Error(), 600)
	m.put(l.c)
	return HandoffRejected, true
}

func (m *Manager) put(c Child) {
	if err := m.cfg.Store.Put(c); err != nil {
		m.log.Warn("subagent: record not stored", "child", c.ID, "err", err)
	}
}

// Ended is the runner's report that a child's task ended with status. A
// child that ended without a handoff, and was not yet asked again, gets
// AskAgainText as a follow-up; otherwise its outcome is settled: the
// handoff's, else cancelled (a cancellation was asked, or the task was
// cancelled), else invalid.
func (m *Manager) Ended(id string, status runtime.Status) {
	m.mu.Lock()
	l := m.live[id]
	if l == nil || l.c.State != StateRunning || l.settling || m.closed {
		m.mu.Unlock()
		return
	}
	cancelled := l.cancel != "" || status == runtime.StatusCancelled
	if l.c.Outcome == "" && !l.c.Asked && !cancelled {
		l.c.Asked = true
		m.put(l.c)
		m.mu.Unlock()
		if err := m.cfg.Runner.Ask(id, AskAgainText); err == nil {
			return
		} else {
			m.log.Info("subagent: the handoff could not be asked again", "child", id, "err", err)
		}
		m.mu.Lock()
		if l.c.State != StateRunning || l.settling {
			m.mu.Unlock()
			return
		}
	}
	outcome, reason := l.c.Outcome, l.c.Reason
	switch {
	case outcome != "":
	case cancelled:
		outcome, reason = OutcomeCancelled, l.cancel
		if reason == "" {
			reason = "the child's task was cancelled"
		}
	default:
		outcome, reason = OutcomeInvalid, "the child ended ("+string(status)+") without a valid handoff, after one more ask"
	}
	next := m.settleLocked(l, outcome, reason)
	m.mu.Unlock()
	m.after(l, next)
}

// settleLocked gives l its outcome, frees its slot and returns the queued
// children that may start now (already marked running).
func (m *Manager) settleLocked(l *live, o Outcome, reason string) []*live {
	was := l.c.State
	l.settling = true
	l.c.State, l.c.Outcome, l.c.Ended = StateEnded, o, m.cfg.Clock.Now()
	if reason != "" || o != OutcomeValid {
		l.c.Reason = text.Clip(reason, 600)
	}
	m.put(l.c)
	switch was {
	case StateRunning:
		m.running[l.c.Parent]--
		m.nodeRun--
		if m.running[l.c.Parent] <= 0 {
			delete(m.running, l.c.Parent)
		}
	case StateQueued:
		m.dequeueLocked(l)
	}
	close(l.done)
	m.order = append(m.order, l.c.ID)
	for len(m.order) > maxLive {
		delete(m.live, m.order[0])
		m.order = m.order[1:]
	}
	if m.closed {
		return nil
	}
	var next []*live
	now := m.cfg.Clock.Now()
	for i := 0; i < len(m.queue) && m.nodeRun < m.cfg.MaxRunning; {
		q := m.queue[i]
		if m.running[q.c.Parent] >= m.cfg.MaxRunning {
			i++
			continue
		}
		m.queue = append(m.queue[:i], m.queue[i+1:]...)
		m.decQueued(q.c.Parent)
		q.c.State, q.c.Started = StateRunning, now
		m.running[q.c.Parent]++
		m.nodeRun++
		m.put(q.c)
		next = append(next, q)
	}
	return next
}

func (m *Manager) dequeueLocked(l *live) {
	for i, q := range m.queue {
		if q == l {
			m.queue = append(m.queue[:i], m.queue[i+1:]...)
			m.decQueued(l.c.Parent)
			return
		}
	}
}

func (m *Manager) decQueued(parent string) {
	m.queued[parent]--
	if m.queued[parent] <= 0 {
		delete(m.queued, parent)
	}
}

// after runs outside the lock: the runner hears of the end (a child that
// ran), and the queued children that got a slot start.
func (m *Manager) after(l *live, next []*live) {
	m.mu.Lock()
	c := l.c
	m.mu.Unlock()
	if !c.Started.IsZero() {
		m.cfg.Runner.Close(c)
	}
	for _, q := range next {
		m.start(q)
	}
}

// Close stops the manager for the node's shutdown: every child not ended
// ends in memory as lost (its waiter wakes), and its record stays open in
// the Store, so that the next run's Recover reports it lost.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	for _, l := range m.live {
		if l.c.State == StateEnded || l.settling {
			continue
		}
		l.settling = true
		l.c.State, l.c.Outcome, l.c.Reason = StateEnded, OutcomeLost, "the node stopped while the child ran"
		close(l.done)
	}
	m.queue = nil
	clear(m.running)
	clear(m.queued)
	m.nodeRun = 0
}
