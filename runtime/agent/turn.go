package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/runtime/exec"
	"github.com/harn-dev/harn/util/text"
)

// RunTask runs one task taken with Runtime.Next to its end: model calls
// and tool calls until the model answers without a tool call, the task is
// cancelled, or ctx ends; then it reports Finish.
func (e *Executor) RunTask(ctx context.Context, run *runtime.Run) TaskResult {
	res := TaskResult{Task: run.Task}
	gctx, cancel := context.WithCancel(run.Context())
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	sess, task := e.cfg.Session, run.Task
	statuses := e.cfg.Box.Prompt(sess, task, run.Text)
	// The runtime's handoff (seed 000): the conversation up to the
	// task's submission point, its predecessor's final message and the
	// redacted digest. The context already holds the conversation of
	// every turn this executor ran (and, from the task's first message,
	// keeps only the conversation of earlier tasks: no tool traffic), so
	// only its first task takes the conversation; a successor takes its
	// predecessor's final message and digest always.
	prompt := run.Text
	if !e.remembers.Swap(true) {
		prompt = exec.FormatHandoff(run.Handoff, exec.MaxHandoffBytes) + run.Text
	} else if h := run.Handoff; h.Digest != nil || h.PredecessorFinal != "" {
		prompt = exec.FormatHandoff(runtime.Handoff{PredecessorFinal: h.PredecessorFinal, Digest: h.Digest}, exec.MaxHandoffBytes) + run.Text
	}
	// The prompt is stored before the turn's start is told: with
	// SharedSync the start's synced write makes it durable too.
	if err := e.appendDeferred(Message{Role: RoleUser, Text: prompt, Task: task}); err != nil {
		e.emit(Event{Type: EvTurnStart, Task: task, Text: run.Text})
		return e.finish(ctx, run, res, runtime.StatusFailed, "the context refused the prompt: "+err.Error())
	}
	e.emit(Event{Type: EvTurnStart, Task: task, Text: run.Text})
	for _, s := range statuses {
		e.emit(Event{Type: EvStatus, Task: task, Text: s})
	}
	var gen uint64
	if g, err := e.rt.Grants(task); err == nil {
		gen = g.Generation
	}
	var carry []string // steers taken while a model call ran
	for step := 1; ; step++ {
		e.takeSteers(run, step, carry)
		carry = nil
		res.Steps = step - 1
		if gctx.Err() != nil {
			return e.finish(ctx, run, res, runtime.StatusFailed, "")
		}
		if step > e.cfg.Bounds.Steps {
			be := &BoundError{Kind: ErrStepsBound, Bound: e.cfg.Bounds.Steps, Got: step}
			res.Err = be
			e.refused(run, step, be)
			return e.finish(ctx, run, res, runtime.StatusFailed, be.Error())
		}
		resp, steers, err := e.modelCall(gctx, run, step)
		e.endStep(run)
		carry = steers
		if errors.Is(err, errSteered) && gctx.Err() == nil {
			// seed 001: the steer modifies the task in place; the call in
			// flight is abandoned and the model restarts around it
			e.emit(Event{Type: EvStatus, Task: task, Step: step, Text: "a steer arrived during the model call: it restarts around the steer"})
			continue
		}
		if err != nil {
			if gctx.Err() != nil {
				return e.finish(ctx, run, res, runtime.StatusFailed, "", carry...)
			}
			res.Err = err
			return e.finish(ctx, run, res, runtime.StatusFailed, "the model call failed: "+text.Clip(text.OneLine(err.Error()), 512), carry...)
		}
		for i := range resp.Calls {
			if resp.Calls[i].ID == "" {
				resp.Calls[i].ID = "call_" + strconv.Itoa(step) + "_" + strconv.Itoa(i)
			}
		}
		if len(resp.Calls) == 0 {
			// the final answer: with SharedSync, Finish's synced write
			// makes it durable (when Finish fails, the task was stopped
			// meanwhile, and the turn end's synced write does)
			_ = e.appendDeferred(Message{Role: RoleAssistant, Text: resp.Text, Task: task})
			res.Steps = step
			return e.finish(ctx, run, res, runtime.StatusSucceeded, resp.Text)
		}
		if err := e.cfg.Context.Append(Message{Role: RoleAssistant, Text: resp.Text, Calls: resp.Calls, Task: task}); err != nil {
			res.Err = err
			return e.finish(ctx, run, res, runtime.StatusFailed, contextRefused(err))
		}
		if resp.Text != "" {
			if err := run.Say(clip(resp.Text)); err == nil {
				e.emit(Event{Type: EvMessage, Task: task, Step: step, Text: resp.Text})
			}
		}
		if err := e.cfg.Context.Append(e.runCalls(gctx, run, step, gen, resp.Calls)...); err != nil {
			res.Err = err
			return e.finish(ctx, run, res, runtime.StatusFailed, contextRefused(err))
		}
	}
}

// contextRefused is a task's final message when its context refused a
// write (a full disk): the turn cannot go on without its history.
func contextRefused(err error) string {
	return "the context refused a write, so the turn stopped: " + text.Clip(text.OneLine(err.Error()), 512)
}

// refused records a model call the loop did not make, or whose answer it
// stopped reading, because a bound was reached.
func (e *Executor) refused(run *runtime.Run, step int, be *BoundError) {
	u := runtime.Usage{Provider: e.cfg.Provider.Name(), Node: e.cfg.Node, Agent: "harn", Error: be.class(), Reason: be.Error()}
	if err := run.ModelCall(e.cfg.Model.Name, u, nil, nil); err != nil {
		e.log.Debug("agent: refused model call not recorded", "task", run.Task, "err", err)
	}
	e.emit(Event{Type: EvModel, Task: run.Task, Step: step, Usage: &u})
}

// appendDeferred appends m leaving its fsync to the next synced write when
// the store is shared (SharedSync) and the Context can; else it appends.
func (e *Executor) appendDeferred(m Message) error {
	if dc, ok := e.cfg.Context.(DeferredContext); ok && e.cfg.SharedSync {
		return dc.AppendDeferred(m)
	}
	return e.cfg.Context.Append(m)
}

// takeSteers moves the steers sent since the last boundary into the turn,
// after those taken already (during the model call).
func (e *Executor) takeSteers(run *runtime.Run, step int, taken []string) {
	steers, err := run.Steers()
	if err != nil && len(taken) == 0 {
		return
	}
	for _, s := range append(taken, steers...) {
		_ = e.cfg.Context.Append(Message{Role: RoleUser, Text: s, Task: run.Task})
		e.emit(Event{Type: EvSteer, Task: run.Task, Step: step, Text: s, Status: string(SteerQueued)})
	}
}

// endStep ends the step's scope: skills the model activated leave.
func (e *Executor) endStep(run *runtime.Run) {
	e.cfg.Box.EndStep(e.cfg.Session, run.Task)
	if _, err := run.EndStep(); err != nil {
		e.log.Debug("agent: end of step refused", "task", run.Task, "err", err)
	}
}

// errSteered ends a model call abandoned for a steer.
var errSteered = errors.New("agent: the model call was abandoned for a steer")

// steerable is ctx for one model call, cancelled when a steer reaches the
// task while the model writes an answer (text has streamed): that answer
// is abandoned at once. A steer that comes before any text is left
// pending: the call may be a step of tool calls, whose results the steer
// follows. stop ends the watch (and waits for it) and returns the steers
// it took.
func steerable(ctx context.Context, run *runtime.Run, texting <-chan struct{}) (context.Context, func() []string) {
	cctx, cancel := context.WithCancel(ctx)
	var taken []string
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		pending, writing := false, false
		for {
			select {
			case <-run.Notify():
				pending = true
			case <-texting:
				texting, writing = nil, true
			case <-quit:
				return
			case <-cctx.Done():
				return
			}
			if !pending || !writing {
				continue
			}
			if s, err := run.Steers(); err == nil && len(s) > 0 {
				taken = s
				cancel()
				return
			}
			pending = false
		}
	}()
	return cctx, func() []string {
		close(quit)
		<-done
		cancel()
		return taken
	}
}

// modelCall builds the request from the context and calls the model; a
// context-length refusal sets a recovery checkpoint and retries once. The
// call and its usage go to the ledger. A steer that reaches the task
// during the call abandons it (errSteered); the steers the call's watch
// took are returned (also when the answer was complete first).
func (e *Executor) modelCall(ctx context.Context, run *runtime.Run, step int) (Response, []string, error) {
	sess, task := e.cfg.Session, run.Task
	req := Request{Model: e.cfg.Model.Name, MaxOutput: e.cfg.Model.MaxOutput, Tools: e.cfg.Box.Specs(sess, task),
		System: append([]string{e.cfg.System}, e.cfg.Box.Instructions(sess, task)...)}
	base := Estimate(req)
	texting := make(chan struct{})
	var once sync.Once
	onText := func(s string) {
		once.Do(func() { close(texting) })
		e.emit(Event{Type: EvText, Task: task, Step: step, Text: s})
	}
	var (
		resp   Response
		err    error
		steers []string
	)
	for attempt := 0; attempt < 2; attempt++ {
		req.Messages, err = e.cfg.Context.WorkingSet(ctx, task, e.cfg.Model.UsableInput()-base)
		if err != nil {
			return Response{}, steers, err
		}
		est := Estimate(req)
		sctx, stop := steerable(ctx, run, texting)
		cctx, end := e.traceCall(sctx, req, task, step, attempt, est)
		resp, err = e.cfg.Provider.Complete(cctx, req, onText)
		steers = append(steers, stop()...)
		if err == nil {
			if berr := e.cfg.Bounds.check(resp); berr != nil {
				resp, err = Response{Usage: resp.Usage, Retries: resp.Retries}, berr
			}
		}
		if err == nil && len(resp.Calls) == 0 {
			// a steer sent while the final answer came: the task goes on
			if more, rerr := run.Steers(); rerr == nil {
				steers = append(steers, more...)
			}
		}
		if len(steers) > 0 && ctx.Err() == nil && (err != nil || len(resp.Calls) == 0) {
			// seed 001: the answer is abandoned, the model restarts
			// around the steer (a step of tool calls runs, and the steer
			// follows its results)
			resp, err = Response{Usage: resp.Usage, Retries: resp.Retries}, errSteered
		}
		end(ModelCallEnd{Input: resp.Usage.Input, Output: resp.Usage.Output, CacheRead: resp.Usage.CacheRead, Err: err, ErrClass: errClassOf(err)})
		u := runtime.Usage{Provider: e.cfg.Provider.Name(), Node: e.cfg.Node, Agent: "harn", Estimated: est,
			Input: resp.Usage.Input, Output: resp.Usage.Output, CacheRead: resp.Usage.CacheRead,
			CacheWrite: resp.Usage.CacheWrite, Retries: resp.Retries}
		if err != nil {
			u.Error = errClass(err)
			if be := (*BoundError)(nil); errors.As(err, &be) {
				u.Reason = be.Error()
			}
		}
		if rerr := run.ModelCall(e.cfg.Model.Name, u, evidence(req.Messages), answerEvidence(resp)); rerr != nil {
			e.log.Debug("agent: model call not recorded", "task", task, "err", rerr)
		}
		e.emit(Event{Type: EvModel, Task: task, Step: step, Usage: &u})
		if !errors.Is(err, ErrContextLength) || !e.cfg.Context.Recover(task) {
			break
		}
		e.emit(Event{Type: EvStatus, Task: task, Step: step, Text: "the model's context window was exceeded: recovery checkpoint set, retrying once with the current turn"})
	}
	return resp, steers, err
}

// evidence is what a model call's digest is taken of: the request's
// messages, or the answer's text and tool calls, as JSON (nil when empty).
func evidence(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// answerEvidence is the answer's text and tool calls as JSON, nil for none.
func answerEvidence(r Response) []byte {
	if r.Text == "" && len(r.Calls) == 0 {
		return nil
	}
	return evidence(struct {
		Text  string     `json:"text,omitempty"`
		Calls []ToolCall `json:"calls,omitempty"`
	}{r.Text, r.Calls})
}

// traceCall opens the request's span when a tracer is set.
func (e *Executor) traceCall(ctx context.Context, req Request, task string, step, attempt, est int) (context.Context, func(ModelCallEnd)) {
	if e.cfg.Tracer == nil {
		return ctx, func(ModelCallEnd) {}
	}
	adm := AdmissionAdmitted
	if est > e.cfg.Model.UsableInput() {
		adm = AdmissionOverBudget
	}
	return e.cfg.Tracer.ModelCall(ctx, ModelCallStart{Provider: e.cfg.Provider.Name(), Model: req.Model, Session: e.cfg.Session,
		Task: task, Step: step, Attempt: attempt + 1, MaxOutput: req.MaxOutput, Estimated: est, Budget: e.cfg.Model.UsableInput(),
		Admission: adm, Compaction: compactionOf(e.cfg.Context), Messages: req.Messages})
}

func errClassOf(err error) string {
	if err == nil {
		return ""
	}
	return errClass(err)
}

func errClass(err error) string {
	var (
		se *StatusError
		be *BoundError
	)
	switch {
	case errors.As(err, &be):
		return be.class()
	case errors.Is(err, ErrStreamBound):
		return "stream_over_bound"
	case errors.Is(err, ErrContextLength):
		return "context_length"
	case errors.Is(err, errSteered):
		return "steered"
	case errors.As(err, &se):
		return "http_" + strconv.Itoa(se.Code)
	case errorsIsCancel(err):
		return "cancelled"
	}
	return "error"
}

// runCalls runs one step's tool calls, at most Parallel at once, and
// returns their results in the calls' order. On a cancellation it waits
// for the calls up to the grace period; a call still running then is
// left to the runtime's barrier (outcome_unknown).
func (e *Executor) runCalls(ctx context.Context, run *runtime.Run, step int, gen uint64, calls []ToolCall) []Message {
	specs := e.cfg.Box.Specs(e.cfg.Session, run.Task)
	var mu sync.Mutex
	out := make([]Message, len(calls))
	filled := make([]bool, len(calls))
	sem := make(chan struct{}, e.cfg.Parallel)
	var wg sync.WaitGroup
	waits := map[string]bool{}
	for _, s := range specs {
		if s.Waits {
			waits[s.Name] = true
		}
	}
	for i, c := range calls {
		wg.Add(1)
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			defer wg.Done()
			if !waits[c.Name] { // a waiting call (a child's handoff) holds no slot
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					mu.Lock()
					out[i], filled[i] = toolMsg(run.Task, c.ID, "not run: the task was cancelled", true), true
					mu.Unlock()
					return
				}
				defer func() { <-sem }()
			}
			m := e.runCall(ctx, run, step, gen, specs, c)
			mu.Lock()
			out[i], filled[i] = m, true
			mu.Unlock()
		}()
	}
	done := make(chan struct{})
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t := e.cfg.Clock.NewTimer(e.cfg.Grace)
		select {
		case <-done:
		case <-t.C():
			e.log.Info("agent: tool calls did not stop within the grace period", "task", run.Task)
		}
		t.Stop()
	}
	mu.Lock()
	defer mu.Unlock()
	res := make([]Message, len(calls))
	for i := range calls {
		if filled[i] {
			res[i] = out[i]
		} else {
			res[i] = toolMsg(run.Task, calls[i].ID, "outcome unknown: the call did not stop within the grace period", true)
			e.emit(Event{Type: EvToolPost, Task: run.Task, Step: step, Call: calls[i].ID, Tool: calls[i].Name, Outcome: string(runtime.OutcomeUnknown)})
		}
	}
	return res
}

func toolMsg(task, id, s string, isErr bool) Message {
	return Message{Role: RoleTool, CallID: id, Text: s, IsError: isErr, Task: task}
}

// Previewer is a Box that can say what a call would change (a write's
// or an edit's diff) before it runs: the loop puts it in the call's
// input.requested and tool.pre events, for the operator.
type Previewer interface {
	Preview(c tools.Call) string
}

// runCall runs one call through the runtime's pre-call check, its
// confirmation when the grant asks for one, the tool box, and End.
func (e *Executor) runCall(ctx context.Context, run *runtime.Run, step int, gen uint64, specs []tools.Spec, c ToolCall) Message {
	task := run.Task
	var spec tools.Spec
	for _, s := range specs {
		if s.Name == c.Name {
			spec = s
			break
		}
	}
	cl, err := run.Begin(runtime.CallRequest{ID: c.ID, Capability: c.Name, Input: c.Args, Generation: gen, ContractHash: spec.Hash})
	if err != nil {
		e.emit(Event{Type: EvToolRefused, Task: task, Step: step, Call: c.ID, Tool: c.Name, Args: string(c.Args), Text: err.Error()})
		return toolMsg(task, c.ID, "refused by harn: "+err.Error(), true)
	}
	args, diff := string(c.Args), ""
	if p, ok := e.cfg.Box.(Previewer); ok {
		diff = p.Preview(tools.Call{ID: c.ID, Name: c.Name, Args: c.Args, Session: e.cfg.Session, Task: task, Dir: e.cfg.Dir})
	}
	if cl.Pending {
		e.emit(Event{Type: EvInputRequested, Task: task, Step: step, Call: cl.ID, Tool: c.Name, Args: args, Diff: diff,
			Text: "confirm with `harn task confirm " + task + " " + cl.ID + "`"})
		if err := cl.Wait(ctx); err != nil {
			e.emit(Event{Type: EvToolPost, Task: task, Step: step, Call: cl.ID, Tool: c.Name, Outcome: string(runtime.OutcomeDenied)})
			return toolMsg(task, c.ID, "not run: "+err.Error(), true)
		}
	}
	e.emit(Event{Type: EvToolPre, Task: task, Step: step, Call: cl.ID, Tool: c.Name, Args: args, Diff: diff})
	r, err := e.cfg.Box.Run(cl.Context(), tools.Call{ID: c.ID, Name: c.Name, Args: c.Args, Session: e.cfg.Session, Task: task, Dir: e.cfg.Dir})
	o := runtime.OutcomeSucceeded
	switch {
	case errors.Is(err, tools.ErrOutlived):
		o, r.IsError = runtime.OutcomeUnknown, true // what it started runs on
	case cl.Context().Err() != nil:
		o = runtime.OutcomeAborted
		if r.Content == "" {
			r.Content = "aborted: the task was cancelled"
		}
		r.IsError = true
	case err != nil:
		o, r.Content, r.IsError = runtime.OutcomeFailed, err.Error(), true
	case r.IsError:
		o = runtime.OutcomeFailed
	}
	out := []byte(r.Content)
	if len(out) > runtime.MaxInputBytes {
		out = out[:runtime.MaxInputBytes]
	}
	if err := cl.End(o, out); errors.Is(err, runtime.ErrCallSettled) {
		o = runtime.OutcomeUnknown
	}
	e.emit(Event{Type: EvToolPost, Task: task, Step: step, Call: cl.ID, Tool: c.Name, Outcome: string(o), Output: r.Content})
	return toolMsg(task, c.ID, r.Content, r.IsError)
}

// finish reports the end of the task; steers that came after the last
// step boundary (taken: those a model call's watch took) follow the task
// as follow-ups.
func (e *Executor) finish(ctx context.Context, run *runtime.Run, res TaskResult, status runtime.Status, final string, taken ...string) TaskResult {
	cancelled := run.Context().Err() != nil
	if ctx.Err() != nil && !cancelled && final == "" {
		final = "the node stopped the turn"
	}
	final = clip(final)
	if err := run.Finish(status, final); err != nil && !errors.Is(err, runtime.ErrTaskTerminal) && !errors.Is(err, runtime.ErrTaskNotRunning) {
		res.Err = errors.Join(res.Err, err)
	}
	if cancelled {
		status = runtime.StatusCancelled
	}
	res.Status, res.Final = status, final
	if !cancelled {
		if steers, err := e.rt.TakeSteers(run.Task); err == nil || len(taken) > 0 {
			for _, s := range append(taken, steers...) {
				r, err := e.followUp(run.Task, s, "turn "+run.Task+" had already ended")
				if err != nil {
					r = SteerResult{Steered: run.Task, Message: "steer dropped: " + err.Error()}
				}
				e.emit(Event{Type: EvSteer, Task: run.Task, Text: r.Message, Status: string(r.Mode)})
			}
		}
	}
	e.emit(Event{Type: EvTurnEnd, Task: run.Task, Status: string(status), Text: final})
	return res
}
