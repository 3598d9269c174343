package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/text"
)

// Defaults of an Executor.
const (
	DefaultGrace    = 10 * time.Second
	DefaultParallel = 4
	// SystemPrompt is the base of every request.
	SystemPrompt = "You are harn's coding agent. Work in the session's directory with the tools you are given. " +
		"Call tools when you need to; answer plainly when the task is done."
)

// Config builds an Executor for one runtime session.
type Config struct {
	Runtime  *runtime.Runtime // required
	Session  string           // required
	Provider Provider         // required
	Box      tools.Box        // required
	Context  Context          // default a MemContext
	Model    Model            // required: name and budget
	Dir      string           // the session's working directory
	Node     string           // this node's name, for the ledger's usage
	System   string           // default SystemPrompt
	Grace    time.Duration    // how long a cancelled tool may take to stop; default DefaultGrace (keep it the runtime's)
	Parallel int              // tool calls of one step run at once; default DefaultParallel
	// Bounds limit the model's output: an answer's bytes and tool calls,
	// a task's model calls (zero fields take DefaultBounds). The loop
	// checks the first two on every answer too, for a provider that does
	// not meter its stream; ToolPreviewBytes is the Context's.
	Bounds Bounds
	Clock  clock.Clock // default clock.Real{}
	Logger *slog.Logger
	// OnEvent observes the turn's events, on the loop's goroutines; it
	// must not block.
	OnEvent func(Event)
	// Tracer spans each provider request (nil: none).
	Tracer Tracer
	// SharedSync says that the Context, the runtime's ledger and OnEvent
	// write to one store in which a synced write makes every earlier write
	// durable (the node: one Pebble WAL); that OnEvent of EvTurnStart
	// leads to such a write before any later event of the turn is stored;
	// and that a successful Runtime.Finish ends with one. With a
	// DeferredContext the loop then leaves the fsync of a turn's prompt
	// to the first, and of its final answer to the second.
	SharedSync bool
	// Remembers says that the Context already holds the session's
	// conversation (a session opened again on its stored context): no
	// task takes the runtime's handoff, the first included.
	Remembers bool
}

// Event types.
const (
	EvTurnStart      = "turn.start"
	EvStatus         = "status"          // a status line (a skill activated or skipped)
	EvText           = "text"            // a streamed text delta
	EvModel          = "model"           // a model call ended (Usage)
	EvToolPre        = "tool.pre"        // a tool call passed its check and runs
	EvToolPost       = "tool.post"       // a tool call ended (Outcome)
	EvToolRefused    = "tool.refused"    // the pre-call check refused a call
	EvInputRequested = "input.requested" // a call waits for `harn task confirm`
	EvSteer          = "steer"           // a steer entered the turn at a step boundary, or became a follow-up
	EvMessage        = "message"         // a user-visible assistant message
	EvTurnEnd        = "turn.end"        // the task ended (Status, Text: the final answer)
)

// Event is one thing that happened in a turn (its Type is one of the Ev
// names above).
type Event = runtime.LoopEvent

// Executor runs a session's tasks with harn's loop, one at a time.
type Executor struct {
	cfg Config
	rt  *runtime.Runtime
	log *slog.Logger

	wg sync.WaitGroup // abandoned tool calls still running
	// remembers: the context holds the session's conversation since this
	// executor's first task, so later tasks take no handoff.
	remembers atomic.Bool
}

// New checks cfg and builds an Executor. It does no I/O.
func New(cfg Config) (*Executor, error) {
	switch {
	case cfg.Runtime == nil, cfg.Session == "", cfg.Provider == nil, cfg.Box == nil:
		return nil, fmt.Errorf("%w: a runtime, a session, a provider and a tool box are required", ErrBadConfig)
	case cfg.Model.Name == "" || cfg.Model.UsableInput() <= 0:
		return nil, fmt.Errorf("%w: name a model with a usable input budget", ErrBadConfig)
	case cfg.Grace < 0 || cfg.Parallel < 0:
		return nil, fmt.Errorf("%w: negative grace or parallelism", ErrBadConfig)
	}
	if err := cfg.Bounds.Validate(); err != nil {
		return nil, err
	}
	cfg.Bounds = cfg.Bounds.Norm()
	if cfg.Context == nil {
		cfg.Context = NewMemContext()
	}
	if cfg.System == "" {
		cfg.System = SystemPrompt
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Executor{cfg: cfg, rt: cfg.Runtime, log: cfg.Logger.With("session", cfg.Session, "driver", "harn")}
	e.remembers.Store(cfg.Remembers)
	return e, nil
}

// Context is the executor's conversation.
func (e *Executor) Context() Context { return e.cfg.Context }

// Model is the executor's model.
func (e *Executor) Model() Model { return e.cfg.Model }

// Run takes the session's tasks from the runtime and runs each, until ctx
// ends. It returns ctx's error or the runtime's.
func (e *Executor) Run(ctx context.Context) error {
	defer e.wg.Wait()
	for {
		run, err := e.rt.Next(ctx, e.cfg.Session)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		e.RunTask(ctx, run)
	}
}

// Close waits for tool calls abandoned after their grace period.
func (e *Executor) Close() { e.wg.Wait() }

func (e *Executor) emit(ev Event) {
	if e.cfg.OnEvent == nil {
		return
	}
	ev.At = e.cfg.Clock.Now()
	e.cfg.OnEvent(ev)
}

// SteerMode says what became of a steer.
type SteerMode string

// The steer modes.
const (
	SteerQueued   SteerMode = "delivered" // taken at the next step boundary of the running turn
	SteerFollowUp SteerMode = "follow_up" // the turn it named had ended: queued as a follow-up task
)

// SteerResult is the answer to a steer.
type SteerResult struct {
	Mode    SteerMode `json:"mode"`
	Task    string    `json:"task"`
	Steered string    `json:"steered,omitempty"`
	Message string    `json:"message"`
}

// Steer sends text to the session's running turn (seed 001: it modifies
// the task in place): an answer being written (or a final one) is
// abandoned and the model restarts around it; a step of tool calls runs
// on, and the steer is delivered at the next step boundary (after they
// return). expected is the
// turn (task id) the sender saw; when that turn has already ended, the
// steer becomes a follow-up and the answer says so. Like Runtime.Steer it
// fails with runtime.ErrNoActiveTask when nothing runs and no turn is
// named.
func (e *Executor) Steer(expected, text string) (SteerResult, error) {
	sv, err := e.rt.Session(e.cfg.Session)
	if err != nil {
		return SteerResult{}, err
	}
	running := sv.Task != nil && sv.Task.State == runtime.StateRunning
	if expected == "" || (running && sv.Task.ID == expected) {
		v, err := e.rt.Steer(e.cfg.Session, text)
		if err != nil {
			return SteerResult{}, err
		}
		return SteerResult{Mode: SteerQueued, Task: v.ID, Steered: v.ID, Message: "steer taken: an answer being written restarts around it; a step of tool calls finishes first and the steer reaches the model at the next step boundary"}, nil
	}
	return e.followUp(expected, text, "turn "+expected+" had already ended")
}

func (e *Executor) followUp(task, text, reason string) (SteerResult, error) {
	var grants []runtime.Grant
	if g, err := e.rt.Grants(task); err == nil {
		grants = g.Grants
	}
	v, err := e.rt.FollowUp(e.cfg.Session, runtime.Request{Text: text, Grants: grants})
	if err != nil {
		return SteerResult{}, err
	}
	return SteerResult{Mode: SteerFollowUp, Task: v.ID, Steered: task, Message: "steer queued as follow-up " + v.ID + ": " + reason}, nil
}

// TaskResult is how one task ended.
type TaskResult struct {
	Task   string
	Status runtime.Status
	Final  string
	Steps  int
	Err    error
}

// clip bounds a text the runtime takes.
func clip(s string) string { return text.Clip(s, runtime.MaxTextBytes-16) }

// errorsIsCancel reports a cancellation.
func errorsIsCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
