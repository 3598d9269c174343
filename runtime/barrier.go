package runtime

import (
	"context"
	"fmt"
)

// cancelLocked starts the cancellation of a running task: it refuses new
// calls from now on, denies calls waiting for a confirmation, sends the
// abort signal to the task and to every started call, and arms the grace
// period. The task is cancelling until its executor stops, then quiescing
// until every started call has settled, then terminal.
func (rt *Runtime) cancelLocked(t *task, status Status, by, reason string) {
	rt.recLog(t, Record{Kind: RecCancel, Status: string(status), By: by, Reason: reason})
	t.state, t.status = StateCancelling, status
	t.cancelBy, t.cancelReason, t.cancelStatus = by, reason, status
	t.s.refusing = t
	rt.recLog(t, Record{Kind: RecState, State: StateCancelling, Status: string(status)})
	rt.abortCalls(t)
	t.cancel()
	t.poke()
	rt.armGrace(t)
	rt.settleLocked(t)
	t.s.signal()
}

// abortCalls denies every waiting call and signals every started one.
func (rt *Runtime) abortCalls(t *task) {
	for _, id := range sortedCallIDs(t) {
		c := t.calls[id]
		switch {
		case c.settled:
		case !c.started:
			rt.answer(t, c, false, "runtime", "task "+string(t.state))
		default:
			c.cancel()
		}
	}
}

func (rt *Runtime) armGrace(t *task) {
	if t.timer != nil {
		return
	}
	t.timer = rt.clock.AfterFunc(rt.grace, func() { rt.graceExpired(t) })
}

// settleLocked moves a cancelling or quiescing task on when the barrier
// allows: cancelling → quiescing once the executor has stopped (or none
// ever took the task), quiescing → terminal once no started call is open.
func (rt *Runtime) settleLocked(t *task) {
	if t.state == StateCancelling && (!t.attached || t.stopped) {
		t.state = StateQuiescing
		rt.recLog(t, Record{Kind: RecState, State: StateQuiescing, Status: string(t.status)})
		t.s.signal()
	}
	if t.state == StateQuiescing && t.open == 0 {
		rt.endLocked(t)
	}
}

// graceExpired closes the barrier: every started call still open reaches
// outcome_unknown (a mutating one holds later mutations until Ack), and an
// executor that has not stopped is abandoned.
func (rt *Runtime) graceExpired(t *task) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.state != StateCancelling && t.state != StateQuiescing {
		return
	}
	for _, id := range sortedCallIDs(t) {
		if c := t.calls[id]; c.started && !c.settled {
			rt.settleCall(t, c, OutcomeUnknown, "")
		}
	}
	t.stopped = true
	rt.settleLocked(t)
	s.signal()
}

// endLocked makes the head task terminal, releases its context and lets
// the queue move.
func (rt *Runtime) endLocked(t *task) {
	s := t.s
	if t.timer != nil {
		t.timer.Stop()
	}
	if t.cancel != nil {
		t.cancel()
	}
	t.state, t.after = StateTerminal, nil
	rt.recLog(t, Record{Kind: RecState, State: StateTerminal, Status: string(t.status)})
	t.poke()
	if s.head == t {
		s.head = nil
	}
	s.last = t
	rt.retire(s, t)
	s.signal()
	rt.advance(s)
}

func sortedCallIDs(t *task) []string {
	ids := make([]string, 0, len(t.calls))
	for id := range t.calls {
		ids = append(ids, id)
	}
	sortStrings(ids)
	return ids
}

// Finish is the executor's report that a task's work is over, with its
// status (succeeded or failed) and its final user-visible message. During
// a cancellation it acknowledges the stop (the status stays cancelled or
// superseded). Calls still open are aborted and the barrier waits for them.
func (rt *Runtime) Finish(taskID string, status Status, final string) error {
	if status != StatusSucceeded && status != StatusFailed {
		return fmt.Errorf("%w: status %q; finish with succeeded or failed", ErrBadConfig, status)
	}
	if len(final) > MaxTextBytes {
		return fmt.Errorf("%w: final message of %d bytes", ErrTooLarge, len(final))
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return err
	}
	s := t.s
	defer s.mu.Unlock()
	switch {
	case t.state == StateTerminal:
		return fmt.Errorf("%w: %s", ErrTaskTerminal, t.id)
	case t.stopped || (t.state != StateRunning && t.state != StateCancelling):
		return fmt.Errorf("%w: %s is %s", ErrTaskNotRunning, t.id, t.state)
	}
	t.stopped = true
	if final != "" {
		t.final = final
		s.say("assistant", t.id, final)
	}
	if t.state == StateRunning {
		t.status = status
		rt.abortCalls(t)
		if t.open == 0 {
			rt.endLocked(t)
			return nil
		}
		t.state = StateQuiescing
		rt.recLog(t, Record{Kind: RecState, State: StateQuiescing, Status: string(status)})
		rt.armGrace(t)
	}
	rt.settleLocked(t)
	s.signal()
	return nil
}

// Say records a user-visible assistant message of the running task in the
// session's conversation.
func (rt *Runtime) Say(taskID, text string) error {
	if err := checkText(text); err != nil {
		return err
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return err
	}
	defer t.s.mu.Unlock()
	if t.state != StateRunning {
		return fmt.Errorf("%w: %s is %s", ErrTaskNotRunning, t.id, t.state)
	}
	t.s.say("assistant", t.id, text)
	return nil
}

// TakeSteers returns and clears the steers the task has not yet taken.
func (rt *Runtime) TakeSteers(taskID string) ([]string, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return nil, err
	}
	defer t.s.mu.Unlock()
	out := t.steers
	t.steers = nil
	return out, nil
}

// Run is an executor's hold on a running task, from Next.
type Run struct {
	Session string
	Task    string
	Text    string
	Handoff Handoff
	rt      *Runtime
	ctx     context.Context
	notify  <-chan struct{}
}

// Next waits until the session has a running task that no executor has
// taken, and hands it over. Only one executor takes a task; the barrier
// then waits for its Finish when the task is cancelled.
func (rt *Runtime) Next(ctx context.Context, sessionID string) (*Run, error) {
	s, err := rt.session(sessionID)
	if err != nil {
		return nil, err
	}
	for {
		s.mu.Lock()
		if t := s.head; t != nil && t.state == StateRunning && !t.attached {
			t.attached = true
			r := &Run{Session: s.id, Task: t.id, Text: t.text, Handoff: t.handoff.clone(), rt: rt, ctx: t.ctx, notify: t.notify}
			s.mu.Unlock()
			return r, nil
		}
		w := s.wake
		s.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Context is cancelled when the task is cancelled or superseded: the
// executor stops its step and calls Finish.
func (r *Run) Context() context.Context { return r.ctx }

// Notify receives a value after a steer or a cancellation.
func (r *Run) Notify() <-chan struct{} { return r.notify }

// Steers returns the steers not yet taken.
func (r *Run) Steers() ([]string, error) { return r.rt.TakeSteers(r.Task) }

// Check runs the pre-call checks (see Runtime.Check).
func (r *Run) Check(req CallRequest) (Decision, error) { return r.rt.Check(r.Task, req) }

// Begin checks and starts a call (see Runtime.Begin).
func (r *Run) Begin(req CallRequest) (*Call, error) { return r.rt.Begin(r.Task, req) }

// Say records a user-visible message.
func (r *Run) Say(text string) error { return r.rt.Say(r.Task, text) }

// EndStep ends a model step (see Runtime.EndStep).
func (r *Run) EndStep() ([]string, error) { return r.rt.EndStep(r.Task) }

// Finish reports the end of the task's work (see Runtime.Finish).
func (r *Run) Finish(status Status, final string) error { return r.rt.Finish(r.Task, status, final) }
