package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/harn-dev/harn/runtime/execwire"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/secretenv"

	"github.com/harn-dev/harn/runtime"
)

// DefaultGrace is the time between SIGINT and SIGKILL when a task is
// cancelled; it matches the runtime's default grace period.
const DefaultGrace = 10 * time.Second

// drainWait bounds how long the executor reads an exited agent's output
// after its process group was killed: a process that left the group (setsid)
// and still holds a pipe cannot stall the task. It is a safety bound on
// real time, never what a test relies on.
const drainWait = 2 * time.Second

// maxOpenCalls bounds the agent's tool calls tracked per task.
const maxOpenCalls = 1024

// Environment variables the agent process (and so its hooks) receives.
const (
	EnvSession = "HARN_SESSION"
	EnvTask    = "HARN_TASK"
)

// Config builds an Executor for one runtime session.
type Config struct {
	Runtime *runtime.Runtime // required
	Session string           // required: the runtime session whose tasks this executor runs
	Driver  Driver           // required: the agent command and its formats
	Dir     string           // the agent's working directory; default the node's
	Env     []string         // extra KEY=VALUE entries on top of the node's environment
	Grace   time.Duration    // SIGINT → SIGKILL; default DefaultGrace (keep it equal to the runtime's)
	Clock   clock.Clock      // runs the grace timer; default clock.Real
	Logger  *slog.Logger

	// Observers, called on the executor's goroutine; they must not block.
	OnStart     func(Started)   // the agent process started
	OnFirstByte func(FirstByte) // its first byte of output arrived
	OnOutput    func(Message)   // a user-visible message (the final one too)
	// OnHeld: the agent's latest message, held back because it may yet be
	// its final one (OnOutput reports it once that is settled). A view of
	// the output so far shows it; the next OnOutput or OnHeld replaces it.
	OnHeld  func(Message)
	OnSteer func(SteerResult) // a steer the executor itself turned into a follow-up
	OnEnd   func(TaskResult)  // the task's process is gone and Finish was reported
}

// Started says that a task's agent process started.
type Started struct {
	Task  string
	PID   int // also the process group id
	Taken time.Time
	At    time.Time
}

// FirstByte is the start→first-byte metric of one task: the time from the
// moment the executor took the task from the runtime to the first byte the
// agent wrote on stdout.
type FirstByte struct {
	Task  string
	Taken time.Time
	At    time.Time
	Since time.Duration
}

// Message is one user-visible message of the agent.
type Message struct {
	Task  string
	Text  string // untrusted agent text: sanitize before printing
	Final bool
}

// SteerMode says what became of a steer (execwire.SteerMode).
type SteerMode = execwire.SteerMode

// The steer modes.
const (
	SteerDelivered = execwire.SteerDelivered
	SteerFollowUp  = execwire.SteerFollowUp
	SteerDropped   = execwire.SteerDropped
)

// The reasons a steer is turned into a follow-up.
const (
	ReasonNoStreaming = "this driver has no streaming input"
	ReasonInputClosed = "the agent had finished reading its input"
)

// SteerResult is the answer to a steer (execwire.SteerResult).
type SteerResult = execwire.SteerResult

// TaskResult is how one task ended on this executor.
type TaskResult struct {
	Task        string
	Status      runtime.Status // succeeded or failed; cancelled when the runtime cancelled it
	ExitCode    int            // -1 when killed by a signal or never started
	Signal      string         // the signal that ended the process, if any
	Interrupted bool           // SIGINT was sent
	Killed      bool           // the grace period passed and SIGKILL was sent
	FirstByte   time.Duration  // 0 when the agent wrote nothing
	Final       string
	Err         error // the command could not start, or the runtime refused Finish
}

// Executor runs a session's tasks with an agent command, one at a time.
type Executor struct {
	cfg   Config
	rt    *runtime.Runtime
	clock clock.Clock
	log   *slog.Logger

	mu  sync.Mutex
	cur *current // the task whose process runs now, for Steer
}

type current struct {
	task      string
	inputOpen bool
}

// New checks cfg and builds an Executor.
func New(cfg Config) (*Executor, error) {
	switch {
	case cfg.Runtime == nil:
		return nil, fmt.Errorf("%w: no runtime", ErrBadConfig)
	case cfg.Session == "":
		return nil, fmt.Errorf("%w: no session", ErrBadConfig)
	case cfg.Grace < 0:
		return nil, fmt.Errorf("%w: negative grace period", ErrBadConfig)
	}
	if err := cfg.Driver.Validate(); err != nil {
		return nil, err
	}
	cfg.Driver.Argv = clone(cfg.Driver.Argv)
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Executor{cfg: cfg, rt: cfg.Runtime, clock: cfg.Clock, log: cfg.Logger.With("session", cfg.Session, "driver", cfg.Driver.Name)}, nil
}

// Driver returns the executor's driver.
func (e *Executor) Driver() Driver { return e.cfg.Driver }

// Run takes the session's tasks from the runtime and runs each to its end,
// until ctx ends (then a running task's process is stopped as on a
// cancellation, and the task is finished as failed). It returns ctx's error,
// or the runtime's when the session is gone.
func (e *Executor) Run(ctx context.Context) error {
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

// Steer sends a steer to the session's running task. With a streaming
// driver it goes to the runtime (Runtime.Steer) and from there to the
// agent's input as a new JSON user message. Otherwise (or once the agent has
// finished reading its input) it is queued as a follow-up with the task's
// grants, and the result says so. Like Runtime.Steer, it fails with
// runtime.ErrNoActiveTask when no task runs, and runtime.ErrTaskCancelling
// while the task is being cancelled.
func (e *Executor) Steer(text string) (SteerResult, error) {
	if e.cfg.Driver.Streaming() {
		e.mu.Lock()
		closed := e.cur != nil && !e.cur.inputOpen
		e.mu.Unlock()
		if !closed {
			v, err := e.rt.Steer(e.cfg.Session, text)
			if err != nil {
				return SteerResult{}, err
			}
			return SteerResult{Mode: SteerDelivered, Task: v.ID, Steered: v.ID, Message: "steer sent to the agent's streaming input"}, nil
		}
	}
	sv, err := e.rt.Session(e.cfg.Session)
	if err != nil {
		return SteerResult{}, err
	}
	switch {
	case sv.Task == nil || sv.Task.State == runtime.StateBlocked:
		return SteerResult{}, runtime.ErrNoActiveTask
	case sv.Task.State != runtime.StateRunning:
		return SteerResult{}, fmt.Errorf("%w: %s is %s", runtime.ErrTaskCancelling, sv.Task.ID, sv.Task.State)
	}
	reason := ReasonNoStreaming
	if e.cfg.Driver.Streaming() {
		reason = ReasonInputClosed
	}
	return e.followUp(sv.Task.ID, text, reason)
}

// followUp queues text as a follow-up of task, with task's grants.
func (e *Executor) followUp(task, text, reason string) (SteerResult, error) {
	var grants []runtime.Grant
	if g, err := e.rt.Grants(task); err == nil {
		grants = g.Grants
	}
	v, err := e.rt.FollowUp(e.cfg.Session, runtime.Request{Text: text, Grants: grants})
	if err != nil {
		return SteerResult{}, err
	}
	return SteerResult{Mode: SteerFollowUp, Task: v.ID, Steered: task, Message: "steer queued as follow-up: " + reason}, nil
}

func (e *Executor) setCurrent(c *current) {
	e.mu.Lock()
	e.cur = c
	e.mu.Unlock()
}

func (e *Executor) closeInput(c *current) {
	e.mu.Lock()
	c.inputOpen = false
	e.mu.Unlock()
}

// env is the agent's environment: the node's without harn's own secrets
// (the provider key, its file, the node's tokens: the agent keeps its own
// keys), the configured extras, and the session and task ids so that the
// agent's hooks map to them.
func (e *Executor) env(task string) []string {
	env := append(secretenv.ScrubHarn(os.Environ()), e.cfg.Env...)
	return append(env, EnvSession+"="+e.cfg.Session, EnvTask+"="+task)
}

// prompt is what the agent reads first: the handoff block, when the task is
// a successor, then the task's text.
func prompt(run *runtime.Run) string {
	return FormatHandoff(run.Handoff, MaxHandoffBytes) + run.Text
}

// finishErr keeps a refused Finish unless it is the normal race with the
// grace period.
func finishErr(err error) error {
	if err == nil || errors.Is(err, runtime.ErrTaskTerminal) || errors.Is(err, runtime.ErrTaskNotRunning) {
		return nil
	}
	return err
}
