package runtime

import (
	"context"
	"fmt"
	"github.com/harn-dev/harn/util/clock"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harn-dev/harn/util/ids"
)

// Size bounds of outside input. Oversized input is refused, not cut.
const (
	MaxTextBytes   = 256 << 10 // a task's text, a steer, a message
	MaxInputBytes  = 1 << 20   // a call's raw input or output (digested)
	MaxReasonBytes = 1 << 10   // an operator's reason
	MaxByBytes     = 256       // who answered
	maxMessages    = 4096      // conversation messages kept in memory per session
	maxSettled     = 1024      // settled calls kept per task (to name a first answer)
)

// State is a task's action state.
type State string

// The action states.
const (
	StateQueued     State = "queued"
	StateRunning    State = "running"
	StateCancelling State = "cancelling"
	StateQuiescing  State = "quiescing"
	StateBlocked    State = "blocked"
	StateTerminal   State = "terminal"
	// StateInterrupted is shown, never entered: a task rebuilt from the
	// ledger after a restart whose run the node's death cut short (see
	// Restore). Internally it is terminal.
	StateInterrupted State = "interrupted"
)

var validStates = map[State]bool{StateQueued: true, StateRunning: true, StateCancelling: true,
	StateQuiescing: true, StateBlocked: true, StateTerminal: true, StateInterrupted: true}

// Status is a terminal task's status.
type Status string

// The terminal statuses.
const (
	StatusSucceeded  Status = "succeeded"
	StatusFailed     Status = "failed"
	StatusCancelled  Status = "cancelled"
	StatusSuperseded Status = "superseded"
)

// Action says how a task was submitted.
type Action string

// The actions that create a task.
const (
	ActionStart     Action = "start"
	ActionFollowUp  Action = "follow_up"
	ActionSupersede Action = "supersede"
	ActionReplace   Action = "replace"
)

// Config builds a Runtime.
type Config struct {
	Clock          clock.Clock   // default clock.Real
	Ledger         Ledger        // required
	Key            []byte        // required: the evidence digest key (node.key)
	Grace          time.Duration // the barrier's grace period; default 10 s
	DefaultProfile string        // grants of a request without any; default "read-only"
	KeepEnded      int           // ended tasks kept for views per session; default 64
	Logger         *slog.Logger
}

// SessionConfig describes a runtime session: the named catalog its tasks
// snapshot (see SetCatalog), the working directory relative path grants
// refer to, and the model's input budget for admission. Grants, when set,
// are what the session was given (see grantsOf); nil leaves them to the
// session's first task.
type SessionConfig struct {
	Catalog string
	Workdir string
	Budget  Budget
	Grants  []Grant
}

// Runtime hosts the task runtimes of many sessions. It is safe for
// concurrent use. Lock order: a session's lock, then the task index lock.
type Runtime struct {
	clock     clock.Clock
	ledger    Ledger
	dig       *Digester
	grace     time.Duration
	defGrants []Grant
	keep      int
	log       *slog.Logger

	gmu    sync.Mutex // serializes writers of global
	global atomic.Pointer[global]
	gens   map[string]uint64

	mu       sync.RWMutex
	sessions map[string]*session
	tasks    map[string]*task
}

// New builds a Runtime.
func New(cfg Config) (*Runtime, error) {
	if cfg.Ledger == nil {
		return nil, fmt.Errorf("%w: a ledger is required", ErrBadConfig)
	}
	dig, err := NewDigester(cfg.Key)
	if err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 10 * time.Second
	}
	if cfg.DefaultProfile == "" {
		cfg.DefaultProfile = "read-only"
	}
	def, err := Profile(cfg.DefaultProfile)
	if err != nil {
		return nil, err
	}
	if cfg.KeepEnded <= 0 {
		cfg.KeepEnded = 64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	rt := &Runtime{clock: cfg.Clock, ledger: cfg.Ledger, dig: dig, grace: cfg.Grace, defGrants: def, keep: cfg.KeepEnded,
		log: cfg.Logger, gens: map[string]uint64{}, sessions: map[string]*session{}, tasks: map[string]*task{}}
	rt.global.Store(&global{catalogs: map[string]*catalog{}, disabled: map[string]bool{}})
	return rt, nil
}

// SetCatalog publishes a new generation of the named catalog and returns
// its generation. Tasks already running keep their snapshot.
func (rt *Runtime) SetCatalog(name string, caps []Capability) (uint64, error) {
	rt.gmu.Lock()
	defer rt.gmu.Unlock()
	gen := rt.gens[name] + 1
	c, err := newCatalog(name, gen, caps)
	if err != nil {
		return 0, err
	}
	rt.gens[name] = gen
	g := rt.global.Load().clone()
	g.catalogs[name] = c
	rt.global.Store(g)
	return gen, nil
}

// Revoke revokes the capabilities matching pattern globally: it overrides
// every task's snapshot at once.
func (rt *Runtime) Revoke(pattern string) {
	rt.gmu.Lock()
	defer rt.gmu.Unlock()
	g := rt.global.Load().clone()
	g.revoked = append(g.revoked, pattern)
	rt.global.Store(g)
}

// Unrevoke lifts a global revocation made with the same pattern.
func (rt *Runtime) Unrevoke(pattern string) {
	rt.gmu.Lock()
	defer rt.gmu.Unlock()
	g := rt.global.Load().clone()
	out := g.revoked[:0]
	for _, p := range g.revoked {
		if p != pattern {
			out = append(out, p)
		}
	}
	g.revoked = out
	rt.global.Store(g)
}

// SetProviderEnabled enables or disables a provider globally; a disabled
// provider overrides every task's snapshot.
func (rt *Runtime) SetProviderEnabled(provider string, enabled bool) {
	rt.gmu.Lock()
	defer rt.gmu.Unlock()
	g := rt.global.Load().clone()
	if enabled {
		delete(g.disabled, provider)
	} else {
		g.disabled[provider] = true
	}
	rt.global.Store(g)
}

// session is one chat session's task runtime state, guarded by mu.
type session struct {
	id    string
	cfg   SessionConfig
	mu    sync.Mutex
	head  *task   // running, cancelling, quiescing or blocked; nil when idle
	queue []*task // queued behind head
	last  *task   // the task that ended last
	// refusing: the running task last cancelled or superseded; its
	// refusal of the session's calls holds until a new task starts or the
	// agent's turn ends (see cancelled.go).
	refusing *task
	ended    []*task // ended tasks kept for views
	conv     []Message
	base     int // absolute index of conv[0]
	holds    []hold
	wake     chan struct{} // closed and replaced on every change
	// grants are what the session was given: its first task's (the
	// request's, or the runtime's default), or SessionConfig.Grants. A
	// later task that names none holds them; one that names others holds
	// those, and only within them. nil until fixed.
	grants []Grant
}

// hold is a mutating call that ended with an unknown outcome and waits for
// an acknowledgement.
type hold struct{ task, call, capability string }

// Message is one user-visible message of the conversation.
type Message struct {
	Role string `json:"role"` // user or assistant
	Task string `json:"task"`
	Text string `json:"text"`
}

func (s *session) signal() {
	close(s.wake)
	s.wake = make(chan struct{})
}

func (s *session) say(role, task, text string) {
	s.conv = append(s.conv, Message{Role: role, Task: task, Text: text})
	if n := len(s.conv) - maxMessages; n > 0 {
		s.conv = append([]Message(nil), s.conv[n:]...)
		s.base += n
	}
}

// convUntil returns the conversation up to absolute index i.
func (s *session) convUntil(i int) []Message {
	i -= s.base
	if i <= 0 {
		return []Message{}
	}
	return append([]Message(nil), s.conv[:min(i, len(s.conv))]...)
}

// task is one top-level task. Every field is guarded by its session's mu.
type task struct {
	s               *session
	id              string
	action          Action
	text            string
	grants          []Grant
	limits          []Limit
	inherit         *task // a replacement: the task whose reductions it keeps, merged when it starts
	requiresSuccess bool
	by              string // who submitted it
	cancelBy        string // who cancelled it
	cancelReason    string
	cancelStatus    Status // cancelled or superseded, once cancelled
	queued          bool   // it waited behind another task: it is a successor
	state           State
	status          Status
	submitted       int // absolute conversation index before its own text
	created         time.Time
	seq             uint64
	after           *task // the task it was queued behind: its dependency (dropped once it starts or ends)
	afterID         string
	pred            *task  // the task that ended just before it started
	interrupted     string // rebuilt after a restart that cut it short: the reason (node_restart)
	handoff         *Handoff

	snap       *catalog
	loaded     map[string]int // tool → tokens
	skillsTask map[string]int // skill → tokens, until the task ends
	skillsStep map[string]int // skill → tokens, until the step ends
	active     int

	calls    map[string]*call
	refusals []RefusedCall // the first MaxRefusedCalls refused calls (counts.Refused counts them all)
	settled  []string      // settled call ids, oldest first; beyond maxSettled the oldest are forgotten
	nextCall int
	open     int // started calls not settled
	counts   CallCounts
	perCap   map[string]int

	steers   []string
	final    string
	attached bool
	stopped  bool // the executor finished or was abandoned
	ctx      context.Context
	cancel   context.CancelFunc
	notify   chan struct{}
	timer    clock.Timer
}

// OpenSession opens a session's task runtime.
func (rt *Runtime) OpenSession(id string, cfg SessionConfig) error {
	if id == "" || len(id) > maxNameBytes {
		return fmt.Errorf("%w: session id must be 1 to %d bytes", ErrBadConfig, maxNameBytes)
	}
	if err := cfg.Budget.validate(); err != nil {
		return err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, ok := rt.sessions[id]; ok {
		return fmt.Errorf("%w: %s", ErrSessionExists, id)
	}
	rt.sessions[id] = &session{id: id, cfg: cfg, wake: make(chan struct{}), grants: slices.Clone(cfg.Grants)}
	return nil
}

// ReopenSession opens a session again after its loop stopped (the session
// ended, or the node restarted and rebuilt its tasks): an idle session the
// runtime still holds takes cfg (its catalog, workdir and budget; its
// grants when cfg names them, else it keeps its own), and one it does not
// hold is opened. Its ended tasks and its unknown-outcome holds stay.
func (rt *Runtime) ReopenSession(id string, cfg SessionConfig) error {
	if err := cfg.Budget.validate(); err != nil {
		return err
	}
	for _, g := range cfg.Grants {
		if err := g.validate(); err != nil {
			return err
		}
	}
	s, err := rt.session(id)
	if err != nil {
		return rt.OpenSession(id, cfg)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head != nil || len(s.queue) > 0 {
		return fmt.Errorf("%w: %s", ErrTaskActive, id)
	}
	grants := s.grants
	if cfg.Grants != nil {
		grants = slices.Clone(cfg.Grants)
	}
	s.cfg, s.grants = cfg, grants
	s.signal()
	return nil
}

// SessionGrants are what a session was given; nil while no task has fixed
// them.
func (rt *Runtime) SessionGrants(id string) ([]Grant, error) {
	s, err := rt.session(id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.grants), nil
}

func (rt *Runtime) session(id string) (*session, error) {
	rt.mu.RLock()
	s := rt.sessions[id]
	rt.mu.RUnlock()
	if s == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoSession, id)
	}
	return s, nil
}

// lock finds a task and locks its session; the caller unlocks t.s.mu.
func (rt *Runtime) lock(id string) (*task, error) {
	rt.mu.RLock()
	t := rt.tasks[id]
	rt.mu.RUnlock()
	if t == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoTask, id)
	}
	t.s.mu.Lock()
	return t, nil
}

func (rt *Runtime) newTask(s *session, action Action, text string, grants []Grant, requiresSuccess bool) *task {
	now := rt.clock.Now()
	t := &task{s: s, id: "t-" + ids.New(now), action: action, text: text, grants: grants,
		requiresSuccess: requiresSuccess, state: StateQueued, created: now}
	return t
}

func (rt *Runtime) index(t *task) {
	rt.mu.Lock()
	rt.tasks[t.id] = t
	rt.mu.Unlock()
}

// retire keeps an ended task for views, forgetting the oldest beyond the
// bound (the ledger keeps their records).
func (rt *Runtime) retire(s *session, t *task) {
	s.ended = append(s.ended, t)
	if n := len(s.ended) - rt.keep; n > 0 {
		rt.mu.Lock()
		for _, old := range s.ended[:n] {
			delete(rt.tasks, old.id)
		}
		rt.mu.Unlock()
		s.ended = append([]*task(nil), s.ended[n:]...)
	}
}

// rec appends a record about t to the ledger.
func (rt *Runtime) rec(t *task, r Record) error {
	t.seq++
	r.V, r.Seq, r.TS, r.Session, r.Task = RecordVersion, t.seq, rt.clock.Now().UTC(), t.s.id, t.id
	if err := rt.ledger.Append(r); err != nil {
		t.seq--
		return fmt.Errorf("%w: %w", ErrLedger, err)
	}
	return nil
}

// recLog appends a record whose change happens anyway (the runtime must
// move on: a cancellation is never held up by the disk) and logs a failure.
func (rt *Runtime) recLog(t *task, r Record) {
	if err := rt.rec(t, r); err != nil {
		rt.log.Error("runtime ledger append failed", "task", t.id, "kind", string(r.Kind), "err", err)
	}
}

// TaskView is the JSON-able snapshot of a task the roster shows.
type TaskView struct {
	ID              string    `json:"id"`
	Session         string    `json:"session"`
	Action          Action    `json:"action"`
	State           State     `json:"state"`
	Status          Status    `json:"status,omitempty"`
	QueueDepth      int       `json:"queue_depth"`
	Position        int       `json:"position,omitempty"` // 1-based place in the queue
	RequiresSuccess bool      `json:"requires_success,omitempty"`
	Predecessor     string    `json:"predecessor,omitempty"`   // the task it was queued behind
	PendingCalls    []string  `json:"pending_calls,omitempty"` // calls waiting for a confirmation
	CreatedAt       time.Time `json:"created_at"`
	By              string    `json:"by,omitempty"` // who submitted it
	// Reason (an interrupted task): why it ended without an outcome,
	// node_restart.
	Reason string `json:"reason,omitempty"`
	// Refused counts the task's calls the runtime refused (its grants, a
	// protected path, a revocation, …); RefusedCalls names the first
	// MaxRefusedCalls of them. A task that ends succeeded with refusals
	// did not do everything it was asked: its outcome says so.
	Refused      int           `json:"refused,omitempty"`
	RefusedCalls []RefusedCall `json:"refused_calls,omitempty"`
}

// RefusedCall is a call the runtime refused: the capability and the check
// that refused it.
type RefusedCall struct {
	Capability string `json:"capability"`
	Check      string `json:"check"`
}

// MaxRefusedCalls bounds the refused calls a task's view names.
const MaxRefusedCalls = 8

// refused counts a refused call of t and names the first ones.
func (t *task) refused(capability, check string) {
	t.counts.Refused++
	if len(t.refusals) < MaxRefusedCalls {
		t.refusals = append(t.refusals, RefusedCall{Capability: clipBy(capability), Check: check})
	}
}

// SessionView is a session's task runtime at a glance.
type SessionView struct {
	Session     string     `json:"session"`
	Task        *TaskView  `json:"task,omitempty"` // running, cancelling, quiescing or blocked
	Queue       []TaskView `json:"queue,omitempty"`
	QueueDepth  int        `json:"queue_depth"`
	Last        *TaskView  `json:"last,omitempty"`         // the task that ended last
	AwaitingAck []string   `json:"awaiting_ack,omitempty"` // tasks whose unknown mutations wait for ack
}

func (t *task) view() TaskView {
	v := TaskView{ID: t.id, Session: t.s.id, Action: t.action, State: t.state, QueueDepth: len(t.s.queue),
		RequiresSuccess: t.requiresSuccess, CreatedAt: t.created, By: t.by}
	if t.state == StateTerminal || t.state == StateCancelling || t.state == StateQuiescing {
		v.Status = t.status
	}
	v.Predecessor = t.afterID
	v.Refused, v.RefusedCalls = t.counts.Refused, slices.Clone(t.refusals)
	if t.interrupted != "" {
		v.State, v.Reason = StateInterrupted, t.interrupted
	}
	for i, q := range t.s.queue {
		if q == t {
			v.Position = i + 1
		}
	}
	for id, c := range t.calls {
		if c.pending && !c.settled {
			v.PendingCalls = append(v.PendingCalls, id)
		}
	}
	sortStrings(v.PendingCalls)
	return v
}

// Task returns a task's view.
func (rt *Runtime) Task(id string) (TaskView, error) {
	t, err := rt.lock(id)
	if err != nil {
		return TaskView{}, err
	}
	defer t.s.mu.Unlock()
	return t.view(), nil
}

// Session returns a session's view.
func (rt *Runtime) Session(id string) (SessionView, error) {
	s, err := rt.session(id)
	if err != nil {
		return SessionView{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := SessionView{Session: s.id, QueueDepth: len(s.queue)}
	if s.head != nil {
		h := s.head.view()
		v.Task = &h
	}
	for _, q := range s.queue {
		v.Queue = append(v.Queue, q.view())
	}
	if s.last != nil {
		l := s.last.view()
		v.Last = &l
	}
	for _, h := range s.holds {
		if len(v.AwaitingAck) == 0 || v.AwaitingAck[len(v.AwaitingAck)-1] != h.task {
			v.AwaitingAck = append(v.AwaitingAck, h.task)
		}
	}
	return v, nil
}

// ActiveTask returns the id of the session's task that is running,
// cancelling or quiescing: the one a hook's pre-call check goes to.
func (rt *Runtime) ActiveTask(sessionID string) (string, bool) {
	s, err := rt.session(sessionID)
	if err != nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head != nil && s.head.state != StateBlocked {
		return s.head.id, true
	}
	return "", false
}
