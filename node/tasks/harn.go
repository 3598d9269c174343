package tasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/node/callfacts"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
	rcontext "github.com/harn-dev/harn/runtime/context"
	"github.com/harn-dev/harn/runtime/exec"
	"github.com/harn-dev/harn/runtime/subagent"
	"github.com/harn-dev/harn/util/ids"
	"github.com/harn-dev/harn/util/text"
)

// Bounds of harn options.
const (
	maxMCP        = 32
	maxOptionText = 2048
	keepEvents    = 4096
	maxEventsPoll = 5 * time.Second
)

// SessionBox is the tool box of one harn session: the loop's Box, the
// runtime catalog it publishes, the MCP servers Open connected, and its
// life. The host opens it before the session's first task and closes it
// (MCP servers stopped and waited for) when the session ends or the node
// closes.
type SessionBox interface {
	tools.Box
	Catalog() string
	Servers() []string
	Open(ctx context.Context) error
	Close() error
}

// BoxSpec is what a BoxFactory builds a session's box from.
type BoxSpec struct {
	Runtime *runtime.Runtime
	Session string
	Catalog string            // the runtime catalog the box publishes into (one per session)
	Workdir string            // the session's project: stdio servers run there
	MCP     []tools.MCPServer // the session's own servers (--mcp NAME=COMMAND)
	// ProjectFiles are the project's trusted .harn files (skills,
	// mcp.json); nil: untrusted, none load.
	ProjectFiles ProjectFiles
	Extra        []tools.Extra // other rooms' core tools (the context's recall)
}

// BoxFactory builds the tool box of a harn session; it does no I/O (the
// host calls Open). Nil in Config: Toolboxes with the host's clock and
// logger.
type BoxFactory func(BoxSpec) (SessionBox, error)

// Toolboxes builds each session's box as a tools.Toolbox from base (its
// Clock, Logger, bounds and the node's own MCP servers): the spec's
// runtime, catalog and project, and the node's servers followed by the
// session's, so that a session's server replaces a node's of its name.
// The user's mcp.json and a trusted project's (the spec's ProjectFiles)
// are read by Open unless base.NoMCPFiles. A result is bounded by
// base.MaxOutput, by default the context's bound on a stored output
// (rcontext.DefaultMaxOutputBytes, 16 MiB), not the toolbox's own 32 KiB:
// the context keeps it whole and the model sees its preview.
func Toolboxes(base tools.Config) BoxFactory {
	return func(s BoxSpec) (SessionBox, error) {
		c := base
		c.Runtime, c.Catalog, c.Project = s.Runtime, s.Catalog, s.Workdir
		if c.MaxOutput <= 0 {
			// the session's context stores a result whole (up to its
			// bound) and shows the model a preview and its reference
			c.MaxOutput = rcontext.DefaultMaxOutputBytes
		}
		if s.ProjectFiles != nil {
			c.ProjectFiles = s.ProjectFiles
		}
		c.MCP = append(slices.Clone(base.MCP), s.MCP...)
		c.Extra = append(slices.Clone(base.Extra), s.Extra...)
		return tools.New(c)
	}
}

// ShellGraceFor keeps the shell's SIGINT → SIGKILL under the runtime's
// barrier grace (exec.DefaultGrace when grace <= 0), so that a cancelled
// shell's Run returns in time.
func ShellGraceFor(grace time.Duration) time.Duration {
	if grace <= 0 {
		grace = exec.DefaultGrace
	}
	return min(tools.DefaultShellGrace, max(grace/2, 10*time.Millisecond))
}

// boxOpenTimeout bounds a session box's Open: every MCP server's start.
const boxOpenTimeout = 30 * time.Second

// harnServers parses the options' --mcp entries (validated).
func harnServers(o HarnOptions) ([]tools.MCPServer, error) {
	out := make([]tools.MCPServer, 0, len(o.MCP))
	seen := map[string]bool{}
	for _, m := range o.MCP {
		s, err := tools.ParseMCPFlag(m)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadAction, err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("%w: --mcp %s given twice", ErrBadAction, s.Name)
		}
		seen[s.Name] = true
		out = append(out, s)
	}
	return out, nil
}

func validateHarn(o HarnOptions) error {
	switch {
	case o.Provider != "" && o.Provider != "openai" && o.Provider != "anthropic":
		return fmt.Errorf("%w: --provider %q; use openai or anthropic", ErrBadAction, clip(o.Provider))
	case o.Model == "":
		return fmt.Errorf("%w: name the model (--model M)", ErrBadAction)
	case len(o.MCP) > maxMCP:
		return fmt.Errorf("%w: over %d --mcp servers", ErrBadAction, maxMCP)
	case o.ContextWindow < 0 || o.MaxOutput < 0:
		return fmt.Errorf("%w: --context-window and --max-output are token counts >= 0", ErrBadAction)
	case len(o.URL) > maxOptionText || len(o.Model) > 256 || len(o.Key) > maxOptionText || len(o.Fork) > 256:
		return fmt.Errorf("%w: provider url, model or key too long", ErrBadAction)
	}
	for _, m := range o.MCP {
		name, cmd, ok := strings.Cut(m, "=")
		if !ok || name == "" || cmd == "" || len(m) > maxOptionText {
			return fmt.Errorf("%w: --mcp %q; give NAME=COMMAND", ErrBadAction, clip(m))
		}
	}
	return nil
}

// harnState is what the host keeps of a harn session.
type harnState struct {
	mu      sync.Mutex
	events  map[string][]agent.Event // task -> its events, bounded
	session sessionLog               // the session's events across tasks (OpHistory)
	wake    chan struct{}
	persist func(n int, e agent.Event) // stores the session's events (HistorySpace); nil: memory only
	// prompted is closed once the running turn's prompt event is
	// ingested (nil: none in flight): it is written while the model call
	// starts, and every later presence event of the session waits for it.
	prompted chan struct{}
}

// prompting notes the turn's prompt event in flight; done ends it.
func (s *harnState) prompting() (done func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.prompted = ch
	s.mu.Unlock()
	return func() { close(ch) }
}

// waitPrompted waits until the turn's prompt event is ingested, so that
// the session's presence events keep the loop's order.
func (s *harnState) waitPrompted() {
	s.mu.Lock()
	ch := s.prompted
	s.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func newHarnState(persist func(n int, e agent.Event)) *harnState {
	return &harnState{events: map[string][]agent.Event{}, wake: make(chan struct{}), persist: persist}
}

func (s *harnState) add(e agent.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.session.add(e)
	if s.persist != nil {
		s.persist(n, e)
	}
	defer func() {
		close(s.wake)
		s.wake = make(chan struct{})
	}()
	evs := s.events[e.Task]
	if len(evs) >= keepEvents && e.Type != agent.EvTurnEnd {
		return // a turn's end is always kept
	}
	s.events[e.Task] = append(evs, e)
	if len(s.events) > keepTasks {
		clear(s.events)
	}
}

// since returns a task's events from index from on, waiting up to wait
// for one when there is none yet.
func (s *harnState) since(ctx context.Context, task string, from int, wait time.Duration) []agent.Event {
	deadline := time.NewTimer(wait) //clock:real a long poll's bound is the caller's real wait
	defer deadline.Stop()
	for {
		s.mu.Lock()
		evs := s.events[task]
		w := s.wake
		s.mu.Unlock()
		if from < len(evs) {
			return append([]agent.Event(nil), evs[from:]...)
		}
		select {
		case <-w:
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// OpenHarn opens a new runtime session whose tasks run harn's own loop,
// announces it as a presence session of agent harn, and starts the loop.
// Its tool box carries the agent tool: its children run on this node.
func (h *Host) OpenHarn(o HarnOptions, workdir string) (string, error) {
	return h.openHarn(o, workdir, nil)
}

// openHarn opens a harn session; kid, when set, makes it a child of
// another (its id, profile, system prompt and first task come from the
// subagent manager) and starts the kid's first task before the loop runs.
func (h *Host) openHarn(o HarnOptions, workdir string, kid *kidStart) (string, error) {
	return h.openHarnAs(o, workdir, kid, nil)
}

// openHarnAs opens a harn session: a new one, a kid's, or (re set) an
// ended one again under its id, with its stored grants, on its context
// and history as they are.
func (h *Host) openHarnAs(o HarnOptions, workdir string, kid *kidStart, re *reopening) (string, error) {
	if err := validateHarn(o); err != nil {
		return "", err
	}
	h.warmTokens()
	if workdir == "" {
		workdir, _ = os.Getwd()
	}
	if st, err := os.Stat(workdir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: --workdir %q is not a directory on node %s", ErrBadAction, workdir, h.cfg.Node)
	}
	// Nothing of the project's .harn runs or loads unless the directory
	// is trusted on this node.
	files, notice, err := h.project(workdir)
	if err != nil {
		return "", fmt.Errorf("%w: --workdir %q: %w", ErrBadAction, workdir, err)
	}
	model, err := agent.ModelFor(o.Model, o.ContextWindow, o.MaxOutput)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadAction, err)
	}
	h.withNodeProvider(&o) // provider.go: the node's key goes to its own provider only
	pc := agent.ProviderConfig{BaseURL: o.URL, Key: h.providerKey(&o), Bounds: h.cfg.Bounds}
	var prov agent.Provider
	if o.Provider == "anthropic" {
		prov = agent.NewAnthropic(pc)
	} else {
		prov = agent.NewOpenAI(pc)
	}
	servers, err := harnServers(o)
	if err != nil {
		return "", err
	}
	now := h.cfg.Clock.Now()
	if re != nil && !now.After(re.after) {
		now = re.after.Add(time.Millisecond) // its start folds after its end
	}
	id := "h-" + ids.New(now)
	if kid != nil {
		id = kid.spec.Child.ID
	}
	if re != nil {
		id, o.Fork = re.id, ""
	}
	h.mu.Lock()
	switch {
	case h.ctx.Err() != nil:
		h.mu.Unlock()
		return "", ErrClosed
	case h.liveLocked() >= maxHostedOpen:
		h.mu.Unlock()
		return "", fmt.Errorf("%w: this node hosts %d runtime sessions already", ErrBadAction, maxHostedOpen)
	}
	h.mu.Unlock()
	// A child's lane forks its parent's at the end of the system prefix
	// (the instructions in effect): it shares them, copies nothing, and
	// never sees the parent's transcript.
	fork, upTo := o.Fork, rcontext.UpToHead
	if kid != nil {
		fork, upTo = kid.spec.Child.Parent, rcontext.UpToSystem
	}
	lane, err := h.openContext(id, workdir, fork, upTo, rcontext.ProviderCondenser{Provider: prov, Model: model.Name}, h.compactionOn(o))
	if err != nil {
		return "", err
	}
	extra := []tools.Extra{h.contexts.Recall()}
	switch {
	case kid != nil:
		extra = append(extra, h.subs.HandoffTool(kid.spec.Profile))
	case h.subs != nil:
		at := h.subs.AgentTool()
		at.Show = func(_, task string) bool { return h.grantNamed(task, subagent.ToolAgent) }
		extra = append(extra, at)
	}
	box, err := h.openBox(BoxSpec{Runtime: h.rt, Session: id, Catalog: agent.Catalog + ":" + id, Workdir: workdir, MCP: servers,
		Extra: extra, ProjectFiles: files})
	if err != nil {
		return "", err
	}
	id, err = h.startHarn(id, box, lane, prov, model, o, workdir, notice, now, kid, re)
	if err != nil {
		_ = box.Close()
		return "", err
	}
	return id, nil
}

// grantNamed reports whether a task's grants name capability itself at
// execute (a wildcard does not offer it: fan-out multiplies a task's cost,
// so the agent tool is opt-in) and its ceiling still holds it there. No
// task yet: yes, for the session's budget estimate.
func (h *Host) grantNamed(task, capability string) bool {
	if task == "" {
		return true
	}
	v, err := h.rt.Grants(task)
	if err != nil {
		return false
	}
	named := false
	for _, g := range v.Grants {
		if g.Capability == capability && g.Level == runtime.Execute {
			named = true
		}
	}
	if !named {
		return false
	}
	for _, c := range v.Ceiling {
		if c.Capability == capability {
			return c.Level == runtime.Execute.String()
		}
	}
	return false
}

// openBox builds and opens a session's tool box: its skills, its MCP
// servers and its first catalog generation. A server of the session's own
// (--mcp) that does not start fails the open, as harn ask promises; one
// from the node's or the project's config is a warning.
func (h *Host) openBox(spec BoxSpec) (SessionBox, error) {
	f := h.cfg.Boxes
	if f == nil {
		f = Toolboxes(tools.Config{Clock: h.cfg.Clock, Logger: h.log.With("room", "tools"), ShellGrace: ShellGraceFor(h.cfg.Grace)})
	}
	box, err := f(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadAction, err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, boxOpenTimeout)
	defer cancel()
	oerr := box.Open(ctx)
	if oerr == nil {
		return box, nil
	}
	up := box.Servers()
	for _, s := range spec.MCP {
		if !slices.Contains(up, s.Name) {
			_ = box.Close()
			return nil, fmt.Errorf("%w: --mcp %s did not start: %w", ErrBadAction, s.Name, oerr)
		}
	}
	if h.ctx.Err() != nil {
		_ = box.Close()
		return nil, ErrClosed
	}
	h.log.Warn("harn session tools: a configured MCP server or file was left out", "session", spec.Session, "err", oerr)
	return box, nil
}

// startHarn opens the runtime session on the open box and starts the
// loop; the loop's goroutine closes the box when the loop stops (the
// session ended or the node closes).
func (h *Host) startHarn(id string, box SessionBox, lane *rcontext.Lane, prov agent.Provider, model agent.Model,
	o HarnOptions, workdir, notice string, now time.Time, kid *kidStart, re *reopening) (string, error) {
	// The loop's box: a child sees only what its profile allows (and
	// handoff); a parent's box serves the agent tool as an extra (listed
	// where its grants name it). Both are in the session's catalog.
	var loopBox tools.Box = box
	system := agent.SystemPrompt
	if kid != nil {
		loopBox = &subagent.ChildBox{Box: box, M: h.subs, Profile: kid.spec.Profile}
		system = subagent.SystemOf(kid.spec.Profile)
	}
	specs := loopBox.Specs(id, "")
	base := agent.Estimate(agent.Request{System: []string{system}, Tools: specs})
	cfg := runtime.SessionConfig{Catalog: box.Catalog(), Workdir: workdir, Budget: model.Budget(base)}
	state := newHarnState(h.persistHistory(id))
	if re != nil {
		// The session's runtime keeps its ended tasks and holds; its
		// history goes on from where it stopped.
		cfg.Grants = re.grants
		if err := h.rt.ReopenSession(id, cfg); err != nil {
			return "", err
		}
		state = h.resumedState(id, re.prev)
	} else if err := h.rt.OpenSession(id, cfg); err != nil {
		return "", err
	}
	hs := &hosted{id: id, agent: AgentHarn, harn: state, box: box, opts: o, workdir: workdir, child: kid != nil,
		notice: notice}
	ag, err := agent.New(agent.Config{Runtime: h.rt, Session: id, Provider: prov, Box: loopBox, Context: lane, Model: model, Dir: workdir,
		Node: h.cfg.Node, Grace: h.cfg.Grace, Clock: h.cfg.Clock, Logger: h.log.With("session", id), Tracer: h.cfg.Tracer, System: system,
		Bounds:  h.cfg.Bounds,
		OnEvent: func(e agent.Event) { h.harnEvent(hs, e) },
		// the turn start's prompt event and Finish's terminal record are
		// synced writes to the ledger that holds the context
		SharedSync: h.sharedSync(),
		// a reopened session's context holds its conversation already
		Remembers: re != nil})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadAction, err)
	}
	hs.ag = ag
	source := "startup"
	if re != nil {
		source = "resume"
	}
	start := presence.Event{SessionID: id, Type: presence.TypeSessionStart, TS: now, Agent: Agent,
		Attrs: map[string]any{presence.AttrCwd: workdir, presence.AttrSource: source}}
	if kid != nil {
		start.Type, start.ParentSessionID = presence.TypeSubagentStart, kid.spec.Child.Parent
		start.Attrs[presence.AttrSource] = "subagent"
		start.Attrs[attrAgentType] = kid.spec.Profile.Name
	}
	// The start event's synced ingest also makes the lane's records
	// durable (openContext, Config.IngestSyncsKV).
	if err := h.emit(start); err != nil {
		return "", err
	}
	if kid != nil {
		if err := kid.first(id, specs); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithCancel(h.ctx)
	hs.cancel = cancel
	h.mu.Lock()
	h.sessions[id] = hs
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer func() {
			if err := box.Close(); err != nil {
				h.log.Warn("harn session tools did not close", "session", id, "err", err)
			}
		}()
		if err := ag.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			h.log.Warn("harn loop stopped", "session", id, "err", err)
		}
	}()
	return id, nil
}

// harnEvent keeps a loop event for `harn ask` and turns the canonical
// ones into presence events: prompt, tool pre and post, input requested,
// stop.
func (h *Host) harnEvent(hs *hosted, e agent.Event) {
	if e.Type != agent.EvText {
		hs.harn.add(e.Bounded()) // a call's args, diff and output: previews, bounded
	} else {
		hs.harn.add(agent.Event{Type: e.Type, Task: e.Task, Step: e.Step, Text: e.Text, At: e.At})
	}
	ev := presence.Event{SessionID: hs.id, TS: e.At, Agent: Agent, Attrs: map[string]any{}}
	if e.Type == agent.EvTurnStart {
		// The prompt event's synced write runs beside the turn's first
		// model call, which waits for nothing it writes; every later
		// event of the session that the node ingests waits for it.
		done := hs.harn.prompting()
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer done()
			h.taskStarted(hs.id, e.Task)
		}()
		return
	}
	if e.Type != agent.EvText && e.Type != agent.EvModel && e.Type != agent.EvStatus && e.Type != agent.EvSteer {
		hs.harn.waitPrompted()
	}
	switch e.Type {
	case agent.EvToolPre, agent.EvToolPost, agent.EvToolRefused:
		h.dropAsk(e.Task, e.Call)
	case agent.EvInputRequested:
		// what the call asks, from its arguments in full (the history
		// keeps them bounded), before the roster hears of the wait
		r := h.confirmationOf(hs.id, e.Task, e.Call, e.Tool, callfacts.OfHarn(e.Tool, []byte(e.Args), e.Diff, hs.workdir),
			Detail(e.Tool, []byte(e.Args)), e.At)
		r.Summary = Summarize(e.Tool, []byte(e.Args))
		h.noteAsk(r)
	}
	switch e.Type {
	case agent.EvToolPre:
		ev.Type = presence.TypeToolPreUse
		ev.Attrs[presence.AttrTool] = text.Clip(e.Tool, 128)
		ev.Attrs[presence.AttrCallKey] = "call:" + text.Clip(e.Call, 128)
	case agent.EvToolPost:
		ev.Type = presence.TypeToolPostUse
		ev.Attrs[presence.AttrTool] = text.Clip(e.Tool, 128)
		ev.Attrs[presence.AttrCallKey] = "call:" + text.Clip(e.Call, 128)
	case agent.EvInputRequested:
		ev.Type = presence.TypeInputRequested
		ev.Attrs[presence.AttrTool] = text.Clip(e.Tool, 128)
		ev.Attrs[presence.AttrRequestKey] = text.Clip(e.Call, 128)
		ev.Attrs[presence.AttrSummary] = text.Clip(e.Tool, 128)
	case agent.EvMessage:
		h.output(hs.id, e.Task, e.Text)
		return
	case agent.EvTurnEnd:
		if hs.box != nil {
			if b, ok := hs.box.(interface{ EndTask(string) }); ok {
				b.EndTask(e.Task)
			}
		}
		h.boundary(hs.id) // a pin or compaction that waited for the turn's next step
		// the final answer's output.chunk and the stop: one write
		var before []presence.Event
		if e.Text != "" {
			if ev, tell := h.outputEvent(hs.id, e.Task, e.Text); tell {
				before = append(before, ev)
			}
		}
		h.taskEnded(hs.id, exec.TaskResult{Task: e.Task, Status: runtime.Status(e.Status)}, before...)
		if hs.child && h.subs != nil {
			h.subs.Ended(hs.id, runtime.Status(e.Status))
		}
		return
	default:
		return
	}
	if err := h.emit(ev); err != nil {
		h.log.Warn("harn event", "session", hs.id, "type", ev.Type, "err", err)
	}
	h.changed(hs.id)
}

// Events returns a harn task's events from index from on, waiting up to
// wait (at most maxEventsPoll) for one.
func (h *Host) Events(ctx context.Context, task string, from int, wait time.Duration) ([]agent.Event, error) {
	session, ok := h.SessionOfTask(task)
	if !ok {
		return nil, fmt.Errorf("%w: %s", runtime.ErrNoTask, task)
	}
	hs := h.lookup(session)
	if hs == nil || hs.harn == nil {
		return nil, fmt.Errorf("%w: task %s does not run harn's own loop", ErrBadAction, task)
	}
	return hs.harn.since(ctx, task, max(from, 0), min(max(wait, 0), maxEventsPoll)), nil
}

// harnSteer steers a harn session; expected is the turn the caller saw.
func harnSteer(hs *hosted, expected, text string) (exec.SteerResult, error) {
	r, err := hs.ag.Steer(expected, text)
	if err != nil {
		return exec.SteerResult{}, err
	}
	mode := exec.SteerDelivered
	if r.Mode == agent.SteerFollowUp {
		mode = exec.SteerFollowUp
	}
	return exec.SteerResult{Mode: mode, Task: r.Task, Steered: r.Steered, Message: r.Message}, nil
}
