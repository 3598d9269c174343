package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/util/clock"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/text"
)

// maxStderrTail bounds the agent's stderr kept for a failure message.
const maxStderrTail = 4 << 10

// taskRun is the state of one task's process, owned by RunTask's goroutine.
type taskRun struct {
	e   *Executor
	run *runtime.Run
	res TaskResult
	cur *current

	queue     [][]byte // input waiting for the writer
	sent      int      // user messages handed to the writer
	results   int      // turns the agent ended
	closeIn   bool     // input closed (or to be closed once the queue is written)
	held      string   // the newest message, held back in case it is the final one
	resultErr bool     // the last turn ended with an error
	errText   string   // the last error the agent reported
	open      map[string]bool
	undeliver []string // steers taken but not written
	started   bool     // the process started
}

// RunTask runs one task taken with Runtime.Next: it starts the agent,
// writes the prompt, relays steers, records output, stops the process when
// the task is cancelled (or ctx ends), and reports Finish. It returns only
// once the agent's process group is gone.
func (e *Executor) RunTask(ctx context.Context, run *runtime.Run) TaskResult {
	taken := e.clock.Now()
	t := &taskRun{e: e, run: run, res: TaskResult{Task: run.Task, ExitCode: -1}, open: map[string]bool{}}
	log := e.log.With("task", run.Task)
	defer func() {
		if e.cfg.OnEnd != nil {
			e.cfg.OnEnd(t.res)
		}
	}()
	if run.Context().Err() != nil || ctx.Err() != nil {
		t.finish(ctx, "")
		return t.res
	}
	p, err := startProcess(e.cfg.Driver.Argv, e.cfg.Dir, e.env(run.Task))
	if err != nil {
		log.Warn("exec: agent did not start", "err", err)
		t.res.Err = err
		t.res.Status = runtime.StatusFailed
		msg := "the agent command could not start: " + text.OneLine(err.Error())
		if ferr := finishErr(run.Finish(runtime.StatusFailed, clipText(msg))); ferr != nil {
			t.res.Err = errors.Join(err, ferr)
		}
		return t.res
	}
	spawned := e.clock.Now()
	t.started = true
	log.Debug("exec: agent started", "pid", p.pid)
	t.cur = &current{task: run.Task, inputOpen: true}
	e.setCurrent(t.cur)
	defer e.setCurrent(nil)
	if e.cfg.OnStart != nil {
		e.cfg.OnStart(Started{Task: run.Task, PID: p.pid, Taken: taken, At: spawned})
	}

	// The writer owns stdin; the readers own stdout and stderr; the waiter
	// reaps the process. Each ends when its pipe or process does, and the
	// drain timer below closes the pipes if a stray process holds them.
	inCh := make(chan []byte)
	go func(in <-chan []byte) {
		defer p.stdin.Close()
		for b := range in {
			if _, err := p.stdin.Write(b); err != nil {
				for range in { // the agent stopped reading: drop the rest
				}
				return
			}
		}
	}(inCh)
	evCh := make(chan Event, 16)
	firstCh := make(chan time.Time, 1)
	go t.readOutput(p.stdout, evCh, firstCh)
	var tail stderrTail
	errDone := make(chan struct{})
	go func() {
		defer close(errDone)
		io.Copy(&tail, p.stderr)
	}()
	exitCh := make(chan error, 1)
	go func() { exitCh <- p.cmd.Wait() }()

	if e.cfg.Driver.Streaming() {
		t.queue = append(t.queue, t.e.cfg.Driver.Steer(prompt(run)))
	} else {
		t.queue = append(t.queue, []byte(prompt(run)))
	}

	var (
		killCh    = make(chan struct{}, 1)
		killTimer clock.Timer
		stopCh    = run.Context().Done()
		ctxCh     = ctx.Done()
		notify    = run.Notify()
		exited    bool
		waitErr   error
		drain     *time.Timer
	)
	stop := func() {
		if t.res.Interrupted {
			return
		}
		t.res.Interrupted = true
		stopCh, ctxCh = nil, nil
		if err := p.interrupt(); err != nil {
			log.Warn("exec: SIGINT failed", "pid", p.pid, "err", err)
		}
		t.closeIn, t.queue = true, nil
		killTimer = e.clock.AfterFunc(e.cfg.Grace, func() {
			select {
			case killCh <- struct{}{}:
			default:
			}
		})
	}
	firstByte := func(at time.Time) {
		t.res.FirstByte = at.Sub(taken)
		if e.cfg.OnFirstByte != nil {
			e.cfg.OnFirstByte(FirstByte{Task: run.Task, Taken: taken, At: at, Since: t.res.FirstByte})
		}
	}
	t.take() // steers sent before the executor took the task
	for !exited || evCh != nil || errDone != nil {
		t.maybeCloseInput(&inCh)
		var sendCh chan []byte
		var next []byte
		if len(t.queue) > 0 && inCh != nil {
			sendCh, next = inCh, t.queue[0]
		}
		select {
		case sendCh <- next:
			t.queue = t.queue[1:]
			t.sent++
		case at := <-firstCh:
			firstByte(at)
		case ev, ok := <-evCh:
			if !ok {
				evCh = nil
				continue
			}
			t.event(ev)
		case <-errDone:
			errDone = nil
		case <-notify:
			t.take()
		case <-stopCh:
			stop()
		case <-ctxCh:
			stop()
		case <-killCh:
			t.res.Killed = true
			log.Info("exec: grace period passed; killing the agent", "pid", p.pid)
			if err := p.kill(); err != nil {
				log.Warn("exec: SIGKILL failed", "pid", p.pid, "err", err)
			}
		case waitErr = <-exitCh:
			exited, exitCh, notify = true, nil, nil
			stopCh, ctxCh = nil, nil
			if killTimer != nil {
				killTimer.Stop()
			}
			// Nothing of the group outlives its leader.
			if err := p.kill(); err != nil {
				log.Warn("exec: SIGKILL of the group failed", "pid", p.pid, "err", err)
			}
			if inCh != nil {
				close(inCh)
				inCh = nil
			}
			drain = time.AfterFunc(drainWait, func() { //clock:real pipes drain in real time
				p.stdout.Close()
				p.stderr.Close()
			})
		}
	}
	// The reader sends the first byte's time before it closes evCh, but
	// the select above may have taken the end of the output (and the
	// process's) first: the time is then still here.
	select {
	case at := <-firstCh:
		firstByte(at)
	default:
	}
	drain.Stop()
	p.stdout.Close()
	p.stderr.Close()
	e.closeInput(t.cur)
	t.res.ExitCode, t.res.Signal = exitInfo(waitErr)
	if t.res.ExitCode < 0 && t.res.Signal == "" && waitErr != nil {
		log.Warn("exec: waiting for the agent failed", "err", waitErr)
	}
	// The process group is gone. Calls it left open stopped with it: they
	// acknowledged the abort, unless the grace period had to kill them (then
	// the runtime's own grace settles them as outcome_unknown).
	if !t.res.Killed {
		for id := range t.open {
			if err := e.rt.AckAbort(run.Task, id); err != nil && !errors.Is(err, runtime.ErrNoCall) && !errors.Is(err, runtime.ErrCallSettled) {
				log.Debug("exec: abort acknowledgement refused", "call", id, "err", err)
			}
		}
	}
	t.finish(ctx, tail.String())
	return t.res
}

// take reads the runtime's new steers and delivers them: to the input
// queue with a streaming driver while the input is open, as follow-ups
// otherwise.
func (t *taskRun) take() {
	steers, err := t.run.Steers()
	if err != nil || len(steers) == 0 {
		return
	}
	for _, s := range steers {
		if t.e.cfg.Driver.Streaming() && !t.closeIn {
			t.queue = append(t.queue, t.e.cfg.Driver.Steer(s))
			continue
		}
		if t.closeIn && t.res.Interrupted {
			t.undeliver = append(t.undeliver, s)
			continue
		}
		reason := ReasonNoStreaming
		if t.e.cfg.Driver.Streaming() {
			reason = ReasonInputClosed
		}
		t.queueFollowUp(s, reason)
	}
}

func (t *taskRun) queueFollowUp(s, reason string) {
	r, err := t.e.followUp(t.run.Task, s, reason)
	if err != nil {
		t.e.log.Warn("exec: steer could not be queued as a follow-up", "task", t.run.Task, "err", err)
		r = SteerResult{Mode: SteerDropped, Steered: t.run.Task, Message: "steer dropped: " + err.Error()}
	}
	if t.e.cfg.OnSteer != nil {
		t.e.cfg.OnSteer(r)
	}
}

// maybeCloseInput closes the agent's input once it has everything: at once
// for a text prompt, and for streaming input once every message has its
// result and no steer waits.
func (t *taskRun) maybeCloseInput(in *chan []byte) {
	if *in == nil || len(t.queue) > 0 {
		return
	}
	if !t.closeIn && (!t.e.cfg.Driver.Streaming() || (t.sent > 0 && t.results >= t.sent)) {
		t.closeIn = true
	}
	if t.closeIn {
		close(*in)
		*in = nil
		t.e.closeInput(t.cur)
	}
}

// event records one piece of agent output.
func (t *taskRun) event(ev Event) {
	switch ev.Kind {
	case EventText:
		t.flush()
		t.held = ev.Text
		t.tellHeld()
	case EventResult:
		t.results++
		t.resultErr = ev.IsError
		if ev.Text != "" && ev.Text != t.held {
			t.flush()
			t.held = ev.Text
			t.tellHeld()
		}
	case EventToolUse:
		if len(t.open) < maxOpenCalls {
			t.open[ev.ToolID] = true
		}
	case EventToolResult:
		delete(t.open, ev.ToolID)
	case EventError:
		t.errText = ev.Text
	}
}

// tellHeld shows the held message to OnHeld.
func (t *taskRun) tellHeld() {
	if t.held != "" && t.e.cfg.OnHeld != nil {
		t.e.cfg.OnHeld(Message{Task: t.run.Task, Text: t.held})
	}
}

// flush records the held message as a user-visible message.
func (t *taskRun) flush() {
	if t.held == "" {
		return
	}
	if err := t.run.Say(t.held); err != nil {
		t.e.log.Debug("exec: message not recorded", "task", t.run.Task, "err", err)
	}
	if t.e.cfg.OnOutput != nil {
		t.e.cfg.OnOutput(Message{Task: t.run.Task, Text: t.held})
	}
	t.held = ""
}

// finish maps the exit to a status and reports Finish with the final
// message; then steers that arrived too late for the agent become
// follow-ups.
func (t *taskRun) finish(ctx context.Context, stderr string) {
	run, res := t.run, &t.res
	stopped := ctx.Err() != nil && run.Context().Err() == nil && (res.Interrupted || !t.started)
	if stopped {
		t.flush() // the agent's last words, then why it ended
	}
	final := t.held
	cancelled := run.Context().Err() != nil // only the runtime's cancellation ends it before Finish
	switch {
	case cancelled:
		res.Status = runtime.StatusCancelled
	case res.ExitCode == 0 && !t.resultErr && !stopped:
		res.Status = runtime.StatusSucceeded
	default:
		res.Status = runtime.StatusFailed
	}
	if res.Status == runtime.StatusFailed && final == "" {
		final = failureText(res, t.errText, stderr, stopped)
	}
	final = clipText(final)
	res.Final = final
	status := res.Status
	if status == runtime.StatusCancelled {
		status = runtime.StatusFailed // the runtime keeps cancelled or superseded
	}
	if final != "" && t.e.cfg.OnOutput != nil {
		t.e.cfg.OnOutput(Message{Task: run.Task, Text: final, Final: true})
	}
	if err := finishErr(run.Finish(status, final)); err != nil {
		res.Err = err
		t.e.log.Warn("exec: finish refused", "task", run.Task, "err", err)
	}
	for _, s := range t.undeliver {
		if t.e.cfg.OnSteer != nil {
			t.e.cfg.OnSteer(SteerResult{Mode: SteerDropped, Steered: run.Task, Message: "steer dropped: the task was cancelled before the agent read it"})
		}
		t.e.log.Info("exec: steer dropped with its cancelled task", "task", run.Task, "bytes", len(s))
	}
	if cancelled {
		return
	}
	// Steers the agent never read (it had ended) follow the task.
	if steers, err := t.e.rt.TakeSteers(run.Task); err == nil {
		for _, s := range steers {
			t.queueFollowUp(s, ReasonInputClosed)
		}
	}
}

func failureText(res *TaskResult, errText, stderr string, stopped bool) string {
	var b strings.Builder
	switch {
	case stopped:
		b.WriteString("the executor stopped the agent")
	case res.Signal != "":
		fmt.Fprintf(&b, "the agent was ended by signal %s", res.Signal)
	case res.ExitCode > 0:
		fmt.Fprintf(&b, "the agent exited with status %d", res.ExitCode)
	default:
		b.WriteString("the agent's last turn failed")
	}
	if errText != "" {
		b.WriteString(": " + text.Clip(text.OneLine(errText), 512))
	} else if last := lastLine(stderr); last != "" {
		b.WriteString(": " + text.Clip(text.OneLine(last), 512))
	}
	return b.String()
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\r\n\t ")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// readOutput decodes stdout lines into events until EOF or the pipe is
// closed; it reports the time of the first byte once.
func (t *taskRun) readOutput(r *os.File, evCh chan<- Event, firstCh chan<- time.Time) {
	defer close(evCh)
	fr := &firstReader{r: r, first: func() { firstCh <- t.e.clock.Now() }}
	lr := newLineReader(fr)
	for {
		line, err := lr.next()
		switch {
		case errors.Is(err, ErrLineLong):
			t.e.log.Debug("exec: agent output line too long; skipped", "task", t.run.Task)
			continue
		case err != nil:
			return
		}
		evs, err := t.e.cfg.Driver.Decode(line)
		if err != nil {
			t.e.log.Debug("exec: agent output line not understood", "task", t.run.Task, "err", err)
			continue
		}
		for _, ev := range evs {
			evCh <- ev
		}
	}
}

// firstReader calls first once, on the first byte read.
type firstReader struct {
	r     io.Reader
	once  sync.Once
	first func()
}

func (f *firstReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 {
		f.once.Do(f.first)
	}
	return n, err
}

// stderrTail keeps the last maxStderrTail bytes written to it.
type stderrTail struct {
	mu  sync.Mutex
	buf []byte
}

func (s *stderrTail) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	if n := len(s.buf) - maxStderrTail; n > 0 {
		s.buf = append(s.buf[:0], s.buf[n:]...)
	}
	return len(p), nil
}

func (s *stderrTail) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.buf)
}
