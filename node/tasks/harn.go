package tasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/runtime/exec"
	"github.com/harn-dev/harn/runtime/subagent"
	"github.com/harn-dev/harn/util/ids"
	"github.com/harn-dev/harn/util/text"
)

// AgentHarn names harn's own agent loop as a task's agent
// (`harn task start --agent harn`, `harn ask`).
const AgentHarn = "harn"

// EnvProviderKey holds the model provider's API key; EnvProviderURL the
// provider URL the node's own key may be sent to.
const (
	EnvProviderKey = "HARN_PROVIDER_KEY"
	EnvProviderURL = "HARN_PROVIDER_URL"
)

// Bounds of harn options.
const (
	maxMCP        = 32
	maxOptionText = 2048
	keepEvents    = 4096
	maxEventsPoll = 5 * time.Second
)

// HarnOptions configure the loop of a new harn session. Key is never
// stored nor forwarded to another node; MCP entries are NAME=COMMAND
// stdio servers the tool box starts for this session.
type HarnOptions struct {
	Provider      string   `json:"provider,omitempty"` // openai (default) or anthropic
	URL           string   `json:"provider_url,omitempty"`
	Model         string   `json:"model,omitempty"`
	ContextWindow int      `json:"context_window,omitempty"`
	MaxOutput     int      `json:"max_output,omitempty"`
	MCP           []string `json:"mcp,omitempty"`
	Key           string   `json:"key,omitempty"`
}

// BoxFactory builds the tool box of a harn session (the MCP servers of
// its options included). Nil: the built-in minimal box.
type BoxFactory func(session, workdir string, mcp []string) (tools.Box, error)

func (o *HarnOptions) validate() error {
	switch {
	case o.Provider != "" && o.Provider != "openai" && o.Provider != "anthropic":
		return fmt.Errorf("%w: --provider %q; use openai or anthropic", ErrBadAction, clip(o.Provider))
	case o.Model == "":
		return fmt.Errorf("%w: name the model (--model M)", ErrBadAction)
	case len(o.MCP) > maxMCP:
		return fmt.Errorf("%w: over %d --mcp servers", ErrBadAction, maxMCP)
	case o.ContextWindow < 0 || o.MaxOutput < 0:
		return fmt.Errorf("%w: --context-window and --max-output are token counts >= 0", ErrBadAction)
	case len(o.URL) > maxOptionText || len(o.Model) > 256 || len(o.Key) > maxOptionText:
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

// providerKey is the key a harn session uses: the caller's (a local
// CLI's HARN_PROVIDER_KEY), else the node's own for the URL its own
// config names, else the node's key file.
func (h *Host) providerKey(o *HarnOptions) (string, error) {
	if o.Key != "" {
		return o.Key, nil
	}
	if u := os.Getenv(EnvProviderURL); o.URL != "" && u != "" && strings.TrimRight(u, "/") != strings.TrimRight(o.URL, "/") {
		return "", nil // the node's key goes only to the provider its own config names
	}
	if k := os.Getenv(EnvProviderKey); k != "" {
		return k, nil
	}
	if h.cfg.ProviderKeyFile != "" {
		return agent.ReadKeyFile(h.cfg.ProviderKeyFile)
	}
	return "", nil
}

// harnState is what the host keeps of a harn session.
type harnState struct {
	mu     sync.Mutex
	events map[string][]agent.Event // task -> its events, bounded
	wake   chan struct{}
}

func newHarnState() *harnState {
	return &harnState{events: map[string][]agent.Event{}, wake: make(chan struct{})}
}

func (s *harnState) add(e agent.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.events[e.Task]
	if len(evs) >= keepEvents && e.Type != agent.EvTurnEnd {
		return // a turn's end is always kept
	}
	s.events[e.Task] = append(evs, e)
	if len(s.events) > keepTasks {
		clear(s.events)
	}
	close(s.wake)
	s.wake = make(chan struct{})
}

// since returns a task's events from index from on, waiting up to wait
// for one when there is none yet.
func (s *harnState) since(ctx context.Context, task string, from int, wait time.Duration) []agent.Event {
	deadline := time.NewTimer(wait)
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
	if err := o.validate(); err != nil {
		return "", err
	}
	if workdir == "" {
		workdir, _ = os.Getwd()
	}
	if st, err := os.Stat(workdir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: --workdir %q is not a directory on node %s", ErrBadAction, workdir, h.cfg.Node)
	}
	model, err := agent.ModelFor(o.Model, o.ContextWindow, o.MaxOutput)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadAction, err)
	}
	key, err := h.providerKey(&o)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadAction, err)
	}
	pc := agent.ProviderConfig{BaseURL: o.URL, Key: key}
	var prov agent.Provider
	if o.Provider == "anthropic" {
		prov = agent.NewAnthropic(pc)
	} else {
		prov = agent.NewOpenAI(pc)
	}
	now := h.cfg.Clock.Now()
	id := "h-" + ids.New(now)
	if kid != nil {
		id = kid.spec.Child.ID
	}
	var box tools.Box
	if h.cfg.Boxes != nil {
		if box, err = h.cfg.Boxes(id, workdir, o.MCP); err != nil {
			return "", fmt.Errorf("%w: %w", ErrBadAction, err)
		}
	} else {
		box = agent.NewMiniBox()
	}
	system := agent.SystemPrompt
	if kid != nil {
		box = &subagent.ChildBox{Box: box, M: h.subs, Profile: kid.spec.Profile}
		system = subagent.SystemOf(kid.spec.Profile, workdir)
	} else if h.subs != nil {
		box = &subagent.ParentBox{Box: box, M: h.subs}
	}
	h.mu.Lock()
	switch {
	case h.ctx.Err() != nil:
		h.mu.Unlock()
		return "", ErrClosed
	case len(h.sessions) >= maxHostedOpen:
		h.mu.Unlock()
		return "", fmt.Errorf("%w: this node hosts %d runtime sessions already", ErrBadAction, maxHostedOpen)
	}
	h.mu.Unlock()
	specs := box.Specs(id, "")
	if _, err := h.rt.SetCatalog(agent.Catalog+":"+id, agent.Capabilities(specs)); err != nil {
		return "", err
	}
	base := agent.Estimate(agent.Request{System: []string{system}, Tools: specs})
	if err := h.rt.OpenSession(id, runtime.SessionConfig{Catalog: agent.Catalog + ":" + id, Workdir: workdir, Budget: model.Budget(base)}); err != nil {
		return "", err
	}
	hs := &hosted{id: id, agent: AgentHarn, harn: newHarnState(), opts: o, workdir: workdir, child: kid != nil}
	ag, err := agent.New(agent.Config{Runtime: h.rt, Session: id, Provider: prov, Box: box, Model: model, Dir: workdir,
		Node: h.cfg.Node, Grace: h.cfg.Grace, Clock: h.cfg.Clock, Logger: h.log.With("session", id), System: system,
		OnEvent: func(e agent.Event) { h.harnEvent(hs, e) }})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadAction, err)
	}
	hs.ag = ag
	start := presence.Event{SessionID: id, Type: presence.TypeSessionStart, TS: now, Agent: Agent,
		Attrs: map[string]any{presence.AttrCwd: workdir, presence.AttrSource: "startup"}}
	if kid != nil {
		start.Type, start.ParentSessionID = presence.TypeSubagentStart, kid.spec.Child.Parent
		start.Attrs[presence.AttrSource] = "subagent"
		start.Attrs[attrAgentType] = kid.spec.Profile.Name
	}
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
		hs.harn.add(e)
	} else {
		hs.harn.add(agent.Event{Type: e.Type, Task: e.Task, Step: e.Step, Text: e.Text, At: e.At})
	}
	ev := presence.Event{SessionID: hs.id, TS: e.At, Agent: Agent, Attrs: map[string]any{}}
	switch e.Type {
	case agent.EvTurnStart:
		h.taskStarted(hs.id, e.Task)
		return
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
		if e.Text != "" {
			h.output(hs.id, e.Task, e.Text)
		}
		h.taskEnded(hs.id, exec.TaskResult{Task: e.Task, Status: runtime.Status(e.Status)})
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
