package tasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	rcontext "github.com/harn-dev/harn/runtime/context"
	"github.com/harn-dev/harn/runtime/exec"
	"github.com/harn-dev/harn/runtime/subagent"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/ids"
	"github.com/harn-dev/harn/util/text"
)

// Errors of the room. Runtime refusals keep the runtime's own sentinels.
var (
	ErrBadAction  = taskwire.ErrBadAction
	ErrNoSession  = errors.New("tasks: no such session on this node")
	ErrClosed     = errors.New("tasks: the node is stopping")
	ErrNotRuntime = errors.New("tasks: the session has no task runtime; start one with `harn task start --session ID TEXT` or `--exec`")
)

// Agent is the agent name of the presence sessions the node opens for its
// runtime sessions.
const Agent = "harn"

// Sink takes canonical events into the node's ingest.
type Sink interface {
	Ingest(evs []presence.Event) error
}

// Sessions resolves a live session of this node by id, prefix or name.
type Sessions interface {
	Resolve(handle string) (presence.State, error)
}

// Config builds a Host.
type Config struct {
	Node     string
	KV       KV     // the runtime ledger's store (required)
	Key      []byte // the node key: evidence digests (required)
	Sink     Sink
	Sessions Sessions
	Clock    clock.Clock   // default clock.Real{}
	Grace    time.Duration // the barrier's grace period and SIGINT→SIGKILL; default 10 s
	Env      []string      // extra environment of every agent command
	Logger   *slog.Logger
	// OnChange is told that a session's task view may have changed. It
	// must not block.
	OnChange func(session string)
	// NoCompaction is the node's compaction.enabled = false: a harn
	// session's LLM compaction is off unless its run turns it on.
	NoCompaction bool
	// Bounds limit what a model can make a harn session hold or do: its
	// provider meters each answer, its loop counts steps, its context
	// shows at most ToolPreviewBytes of a tool result (zero fields take
	// agent.DefaultBounds).
	Bounds agent.Bounds
	// OnFirstByte observes the start→first byte metric of every task.
	OnFirstByte func(exec.FirstByte)
	// Launchers are the node's named agent commands (a start names one
	// with Action.Launcher).
	Launchers Launchers
	// Provider is the node's own model provider (provider.go); Boxes
	// builds harn sessions' tool boxes (nil: Toolboxes with this config's
	// clock, logger and grace).
	Provider Provider
	Boxes    BoxFactory
	// Tracer spans each provider request of harn's loop (nil: none; see
	// GenAITracer).
	Tracer agent.Tracer
	// IngestSyncsKV says that Sink's Ingest, when it returns nil, has
	// made every earlier write to KV durable: its events go to KV's own
	// store with an fsync, which covers every earlier write (the node's
	// ledger). A harn session's open then writes its context records
	// without an fsync of their own: the session's start event, ingested
	// before the open returns, makes them durable with it. Its loop does
	// the same with a turn's prompt (the prompt event that follows it) and
	// its final answer (the task's synced terminal record that follows
	// it): agent.Config.SharedSync.
	IngestSyncsKV bool
	// Trust says which projects' .harn files (mcp.json, agent profiles,
	// skills, hooks) a harn session loads; nil: none (defaults closed).
	Trust ProjectTrust
}

// ProjectTrust is the node's directory trust, as a harn session's open
// and a child's profile lookup ask it.
type ProjectTrust interface {
	// Project returns dir's trusted .harn files (nil: untrusted, or it
	// has none) and, when some did not load, the one line that says so
	// and names the command that trusts them. An error refuses the
	// session: dir cannot be read, or it is in the node's data dir.
	Project(dir string) (files ProjectFiles, notice string, err error)
}

// ProjectFiles are a trusted project's .harn files as the trust check
// read them (slash names relative to .harn): what tools and subagent load.
type ProjectFiles interface {
	ReadDir(name string) ([]fs.DirEntry, error)
	ReadFile(name string, max int64) ([]byte, error)
}

// hosted is one runtime session of this node.
type hosted struct {
	id       string
	external bool   // an external agent's session: no executor
	agent    string // its agent
	ex       *exec.Executor
	cancel   context.CancelFunc
	run      *runtime.Run    // external: the running task's hold
	ag       *agent.Executor // harn's own loop
	harn     *harnState
	box      SessionBox  // harn's: its tools, closed when the loop stops
	ended    bool        // the presence session ended: nothing more runs here
	opts     HarnOptions // harn: the options it was opened with (its children's)
	workdir  string
	notice   string // harn: what of its project did not load, and why (the start says it)
	child    bool   // harn: a subagent of another session
}

// Host hosts the node's task runtimes. It is safe for concurrent use.
type Host struct {
	cfg Config
	rt  *runtime.Runtime
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	warm   sync.Once // the token vocabulary, at the first harn session

	mu       sync.Mutex
	sessions map[string]*hosted
	texts    map[string]string     // task -> its text, clipped
	outputs  map[string][]string   // task -> its last messages
	outN     map[string]int        // task -> how many messages it said (orders the stored ring)
	held     map[string]string     // task -> its latest message, not yet settled (exec's OnHeld)
	lastOut  map[string]time.Time  // session -> when its output last told the roster (output.chunk)
	order    []string              // tasks in creation order, to bound texts and outputs
	briefs   map[string]briefHash  // session -> last brief told through OnChange
	stored   map[string]*harnState // session -> its history read back (a session this run does not host)
	// endedOrder: the ended harn sessions still hosted, oldest first
	// (pruneEndedLocked bounds them); reopenMu serializes reopens.
	endedOrder []string
	reopenMu   sync.Mutex

	approvals *Approvals
	asks      map[askKey]asked // open confirmations: what each asks (asks.go)
	askSeq    uint64
	contexts  *rcontext.Space   // harn sessions' histories and working sets
	subs      *subagent.Manager // the children of harn sessions
	kids      *childRunner      // runs subs' children; keeps their grants
}

// Bounds of what the host keeps per task for views.
const (
	keepTasks     = 4096
	keepOutputs   = 32
	outputChars   = 2000
	briefTextLen  = 160
	changePoll    = 250 * time.Millisecond
	maxHostedOpen = 1024
	outputEvery   = time.Second
)

// New builds a Host and starts its watcher; Close stops it.
func New(cfg Config) (*Host, error) {
	if cfg.KV == nil || len(cfg.Key) == 0 {
		return nil, fmt.Errorf("%w: tasks: a ledger store and the node key are required", runtime.ErrBadConfig)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = exec.DefaultGrace
	}
	if err := cfg.Bounds.Validate(); err != nil {
		return nil, err
	}
	cfg.Bounds = cfg.Bounds.Norm()
	rt, err := runtime.New(runtime.Config{Clock: cfg.Clock, Ledger: NewLedger(cfg.KV), Key: cfg.Key,
		Grace: cfg.Grace, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	if err := setAgentCatalogs(rt); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{cfg: cfg, rt: rt, log: cfg.Logger, ctx: ctx, cancel: cancel,
		sessions: map[string]*hosted{}, stored: map[string]*harnState{}, texts: map[string]string{}, outputs: map[string][]string{},
		outN: map[string]int{}, held: map[string]string{}, lastOut: map[string]time.Time{},
		briefs: map[string]briefHash{}, approvals: NewApprovals(cfg.Node, cfg.Clock)}
	h.contexts = h.newContexts()
	h.kids = &childRunner{h: h}
	subs, err := subagent.New(subagent.Config{Runner: h.kids, Store: NewSubagentStore(cfg.KV),
		Clock: cfg.Clock, Logger: cfg.Logger.With("room", "subagent"), Profiles: h.profiles})
	if err != nil {
		return nil, err
	}
	h.subs = subs
	h.wg.Add(1)
	go h.watch()
	return h, nil
}

// warmTokens loads the token vocabulary in the background the first time
// a harn session opens, for its estimates: not at start, so that a node
// that runs no harn session does not hold it (it is about 8 MiB).
func (h *Host) warmTokens() {
	h.warm.Do(func() {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			agent.WarmTokens()
		}()
	})
}

// project asks the node's trust for dir's .harn files (none without it).
func (h *Host) project(dir string) (ProjectFiles, string, error) {
	if h.cfg.Trust == nil {
		return nil, "", nil
	}
	return h.cfg.Trust.Project(dir)
}

// profiles are the subagent profiles of a parent's directory: the
// built-ins, and a trusted project's .harn/agents.
func (h *Host) profiles(dir string) (map[string]subagent.Profile, error) {
	files, _, err := h.project(dir)
	if err != nil || files == nil {
		return subagent.Builtins(), err
	}
	return subagent.LoadProfilesFrom(files, subagent.AgentsDir(dir))
}

// Runtime is the hosted runtime (tests, benchmarks).
func (h *Host) Runtime() *runtime.Runtime { return h.rt }

// Approvals are the node's open permission requests.
func (h *Host) Approvals() *Approvals { return h.approvals }

// Close stops every executor (their agents are stopped as on a
// cancellation) and the watcher, and waits for them.
func (h *Host) Close() {
	h.subs.Close() // running children stay open in the store: the next start reports them lost
	h.cancel()
	h.wg.Wait()
}

// OpenExec opens a new runtime session whose tasks run argv (an `--exec`
// command line), announces it as a presence session of agent harn, and
// starts its executor.
func (h *Host) OpenExec(command, workdir string) (string, error) {
	argv, err := exec.ParseCommand(command)
	if err != nil {
		return "", fmt.Errorf("%w: --exec: %w", ErrBadAction, err)
	}
	return h.openArgv(argv, workdir)
}

// OpenLauncher opens a runtime session running the node's launcher name.
func (h *Host) OpenLauncher(name, workdir string) (string, error) {
	argv, ok := h.cfg.Launchers[name]
	if !ok {
		defined := strings.Join(h.cfg.Launchers.Names(), ", ")
		if defined == "" {
			defined = "none"
		}
		return "", fmt.Errorf("%w: %q on node %s (defined: %s)", ErrNoLauncher, clip(name), h.cfg.Node, defined)
	}
	return h.openArgv(slices.Clone(argv), workdir)
}

func (h *Host) openArgv(argv []string, workdir string) (string, error) {
	drv := exec.Detect(argv)
	if err := drv.Validate(); err != nil {
		return "", fmt.Errorf("%w: --exec: %w", ErrBadAction, err)
	}
	if workdir == "" {
		workdir, _ = os.Getwd()
	}
	if st, err := os.Stat(workdir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: --workdir %q is not a directory on node %s", ErrBadAction, workdir, h.cfg.Node)
	}
	now := h.cfg.Clock.Now()
	id := "h-" + ids.New(now)
	h.mu.Lock()
	if h.ctx.Err() != nil {
		h.mu.Unlock()
		return "", ErrClosed
	}
	if len(h.sessions) >= maxHostedOpen {
		h.mu.Unlock()
		return "", fmt.Errorf("%w: this node hosts %d runtime sessions already", ErrBadAction, maxHostedOpen)
	}
	h.mu.Unlock()
	if err := h.rt.OpenSession(id, runtime.SessionConfig{Catalog: catalogOf(drv.Name), Workdir: workdir}); err != nil {
		return "", err
	}
	hs := &hosted{id: id, agent: drv.Name, workdir: workdir}
	ex, err := exec.New(exec.Config{Runtime: h.rt, Session: id, Driver: drv, Dir: workdir,
		Env: h.cfg.Env, Grace: h.cfg.Grace,
		Clock: h.cfg.Clock, Logger: h.log.With("session", id),
		OnStart:     func(s exec.Started) { h.taskStarted(id, s.Task) },
		OnFirstByte: h.cfg.OnFirstByte,
		OnOutput:    func(m exec.Message) { h.output(id, m.Task, m.Text) },
		OnHeld:      func(m exec.Message) { h.holdOutput(id, m.Task, m.Text) },
		OnSteer:     func(s exec.SteerResult) { h.remember(s.Task, "(steer) "+s.Message) },
		OnEnd:       func(r exec.TaskResult) { h.taskEnded(id, r) },
	})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadAction, err)
	}
	hs.ex = ex
	if err := h.emit(presence.Event{SessionID: id, Type: presence.TypeSessionStart, TS: now, Agent: Agent,
		Attrs: map[string]any{presence.AttrCwd: workdir, presence.AttrSource: "startup"}}); err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(h.ctx)
	hs.cancel = cancel
	h.mu.Lock()
	h.sessions[id] = hs
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if err := ex.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			h.log.Warn("executor stopped", "session", id, "err", err)
		}
	}()
	return id, nil
}

// attach opens a runtime session for an external agent's live session on
// this node (a task started with --session on it), with the agent's own
// tools as its catalog.
func (h *Host) attach(handle string) (*hosted, error) {
	if hs := h.lookup(handle); hs != nil {
		return hs, nil
	}
	if h.cfg.Sessions == nil {
		return nil, fmt.Errorf("%w %q", ErrNoSession, handle)
	}
	st, err := h.cfg.Sessions.Resolve(handle)
	if err != nil {
		return nil, err
	}
	if hs := h.lookup(st.SessionID); hs != nil {
		return hs, nil
	}
	if st.Ended {
		if st.Agent == Agent {
			if _, found, _ := h.loadSession(st.SessionID); found {
				return nil, fmt.Errorf("%w: session %s has ended; harn ask --session %s TEXT (or the TUI) opens it again", ErrEnded, st.SessionID, st.SessionID)
			}
		}
		return nil, fmt.Errorf("%w: session %s has ended", ErrEnded, st.SessionID)
	}
	cwd := st.Cwd
	if err := h.rt.OpenSession(st.SessionID, runtime.SessionConfig{Catalog: catalogOf(st.Agent), Workdir: cwd}); err != nil &&
		!errors.Is(err, runtime.ErrSessionExists) {
		return nil, err
	}
	hs := &hosted{id: st.SessionID, external: true, agent: st.Agent}
	ctx, cancel := context.WithCancel(h.ctx)
	hs.cancel = cancel
	h.mu.Lock()
	if old := h.sessions[st.SessionID]; old != nil {
		h.mu.Unlock()
		cancel()
		return old, nil
	}
	h.sessions[st.SessionID] = hs
	h.mu.Unlock()
	h.wg.Add(1)
	go h.drive(ctx, hs)
	return hs, nil
}

// drive takes an external session's tasks: the agent does the work, its
// hooks ask Decide before each call; a task ends when the agent's turn
// ends (Observe), or is acknowledged when it is cancelled.
func (h *Host) drive(ctx context.Context, hs *hosted) {
	defer h.wg.Done()
	for {
		run, err := h.rt.Next(ctx, hs.id)
		if err != nil {
			return
		}
		h.mu.Lock()
		hs.run = run
		h.mu.Unlock()
		h.changed(hs.id)
		select {
		case <-run.Context().Done():
			_ = run.Finish(runtime.StatusFailed, "")
		case <-ctx.Done():
			_ = run.Finish(runtime.StatusFailed, "the node stopped")
		}
		h.mu.Lock()
		if hs.run == run {
			hs.run = nil
		}
		h.mu.Unlock()
		h.changed(hs.id)
		if ctx.Err() != nil {
			return
		}
	}
}

// Observe watches the node's stored events for the end of an external
// agent's turn: it ends that session's running task as succeeded.
func (h *Host) Observe(evs []presence.Event) {
	for i := range evs {
		e := &evs[i]
		if e.Type != presence.TypeTurnStop && e.Type != presence.TypeSessionEnd {
			continue
		}
		h.mu.Lock()
		hs := h.sessions[e.SessionID]
		var run *runtime.Run
		if hs != nil && hs.external {
			run, hs.run = hs.run, nil
		}
		var stop context.CancelFunc
		if hs != nil && hs.ag != nil && e.Type == presence.TypeSessionEnd && !hs.ended {
			hs.ended, stop = true, hs.cancel // the loop stops; its goroutine closes the box
			h.pruneEndedLocked(hs.id)
		}
		h.mu.Unlock()
		if stop != nil {
			h.log.Info("harn session ended: its loop and tools stop", "session", e.SessionID)
			stop()
		}
		if hs != nil && hs.external && h.rt.EndTurn(e.SessionID) {
			h.log.Debug("turn ended: a cancelled task's refusal lifts", "session", e.SessionID)
		}
		if run != nil {
			status := runtime.StatusSucceeded
			if e.Type == presence.TypeSessionEnd || e.AttrString(presence.AttrError) != "" {
				status = runtime.StatusFailed
			}
			_ = run.Finish(status, "")
			h.changed(e.SessionID)
		}
	}
}

// live refuses an action on a hosted session that has ended.
func (hs *hosted) live(h *Host) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hs.ended {
		if hs.ag != nil && !hs.child {
			return fmt.Errorf("%w: session %s has ended; harn ask --session %s TEXT (or the TUI) opens it again", ErrEnded, hs.id, hs.id)
		}
		return fmt.Errorf("%w: session %s has ended; start a new one", ErrEnded, hs.id)
	}
	return nil
}

func (h *Host) lookup(id string) *hosted {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

// Hosts reports whether session is a runtime session of this node.
func (h *Host) Hosts(session string) bool { return h.lookup(session) != nil }

// emit sends events to the node's ingest.
func (h *Host) emit(evs ...presence.Event) error {
	if h.cfg.Sink == nil {
		return nil
	}
	return h.cfg.Sink.Ingest(evs)
}

// taskStarted is the executor's start of a task: the presence session
// gets the task's prompt as a submitted user prompt.
func (h *Host) taskStarted(session, task string) {
	h.mu.Lock()
	t := h.texts[task]
	h.mu.Unlock()
	d, _ := runtime.NewDigester(h.cfg.Key)
	attrs := map[string]any{}
	if d != nil {
		attrs[presence.AttrDigest] = d.Digest([]byte(t))
	}
	if err := h.emit(presence.Event{SessionID: session, Type: presence.TypeUserPromptSubmit, TS: h.cfg.Clock.Now(),
		Agent: Agent, Attrs: attrs}); err != nil {
		h.log.Warn("task start event", "session", session, "task", task, "err", err)
	}
	h.changed(session)
}

// taskEnded is the executor's end of a task: the turn stops. before are
// events to ingest with the stop, in one write (the final output's).
func (h *Host) taskEnded(session string, r exec.TaskResult, before ...presence.Event) {
	attrs := map[string]any{}
	if r.Status != runtime.StatusSucceeded {
		attrs[presence.AttrReason] = text.Clip(string(r.Status), 40)
	}
	evs := append(before, presence.Event{SessionID: session, Type: presence.TypeTurnStop, TS: h.cfg.Clock.Now(),
		Agent: Agent, Attrs: attrs})
	if err := h.emit(evs...); err != nil {
		h.log.Warn("task end event", "session", session, "task", r.Task, "err", err)
	}
	h.changed(session)
}

// remember keeps a task's text for views.
func (h *Host) remember(task, t string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.texts[task]; !ok {
		h.order = append(h.order, task)
	}
	h.texts[task] = text.Clip(text.OneLine(t), briefTextLen)
	h.storeText(task, h.texts[task])
	for len(h.order) > keepTasks {
		old := h.order[0]
		h.order = h.order[1:]
		delete(h.texts, old)
		delete(h.outputs, old)
		delete(h.outN, old)
		delete(h.held, old)
	}
}

// output keeps a task's last messages for `harn task show`, in memory and
// in ViewSpace (so that they survive a restart), and tells the roster that
// the session is producing output: an output.chunk event (no content), at
// most one per outputEvery, so that its LAST follows its output.
func (h *Host) output(session, task, msg string) {
	if ev, ok := h.outputEvent(session, task, msg); ok {
		h.emitEvidence(ev, task)
	}
}

// outputEvent keeps a task's message as output does, and returns its
// output.chunk when the roster is to be told (not ingested yet).
func (h *Host) outputEvent(session, task, msg string) (presence.Event, bool) {
	msg = text.Clip(msg, outputChars)
	now := h.cfg.Clock.Now()
	h.mu.Lock()
	out := append(h.outputs[task], msg)
	if len(out) > keepOutputs {
		out = out[len(out)-keepOutputs:]
	}
	h.outputs[task] = out
	n := h.outN[task]
	h.outN[task] = n + 1
	_, wasHeld := h.held[task]
	delete(h.held, task)
	tell := h.tellLocked(session, now)
	h.mu.Unlock()
	h.storeOutput(task, n, msg)
	if wasHeld {
		h.storeHeld(task, "")
	}
	return evidenceEvent(session, now), tell
}

// holdOutput keeps the task's latest message, which the executor holds
// back until it knows whether it is the final one: it shows in the output
// so far (and in ViewSpace) until the next message settles it.
func (h *Host) holdOutput(session, task, msg string) {
	msg = text.Clip(msg, outputChars)
	now := h.cfg.Clock.Now()
	h.mu.Lock()
	h.held[task] = msg
	tell := h.tellLocked(session, now)
	h.mu.Unlock()
	h.storeHeld(task, msg)
	h.evidence(tell, session, task, now)
}

// tellLocked reports whether the session's output should tell the roster
// now (at most once per outputEvery).
func (h *Host) tellLocked(session string, now time.Time) bool {
	if now.Sub(h.lastOut[session]) < outputEvery {
		return false
	}
	if len(h.lastOut) > keepTasks {
		clear(h.lastOut)
	}
	h.lastOut[session] = now
	return true
}

// evidence records an output.chunk (no content) on the session, so that
// the roster's LAST follows the task's output.
func (h *Host) evidence(tell bool, session, task string, now time.Time) {
	if tell {
		h.emitEvidence(evidenceEvent(session, now), task)
	}
}

func evidenceEvent(session string, now time.Time) presence.Event {
	return presence.Event{SessionID: session, Type: presence.TypeOutputChunk, TS: now, Agent: Agent}
}

func (h *Host) emitEvidence(ev presence.Event, task string) {
	if err := h.emit(ev); err != nil {
		h.log.Warn("task output event", "session", ev.SessionID, "task", task, "err", err)
	}
}

// changed tells the node that a session's task view may have changed.
func (h *Host) changed(session string) {
	if h.cfg.OnChange == nil {
		return
	}
	b, ok := h.Brief(session)
	hb := briefHash{}
	if ok {
		hb = b.hash()
	}
	h.mu.Lock()
	same := h.briefs[session] == hb
	h.briefs[session] = hb
	h.mu.Unlock()
	if !same {
		h.cfg.OnChange(session)
	}
}

// watch catches the task view changes no call reports (a barrier that
// closes on its grace timer, a queued task that starts) and tells the
// node.
func (h *Host) watch() {
	defer h.wg.Done()
	t := h.cfg.Clock.NewTicker(changePoll)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C():
			h.mu.Lock()
			ids := make([]string, 0, len(h.sessions))
			for id := range h.sessions {
				ids = append(ids, id)
			}
			h.mu.Unlock()
			for _, id := range ids {
				h.changed(id)
			}
		}
	}
}
