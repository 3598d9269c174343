package runtime

import "fmt"

// A cancelled task keeps refusing its agent's calls after the barrier.
//
// A harn task that governs an external agent's session (an agent harn did
// not start, whose hooks ask before each call) cannot stop that agent's
// turn: the agent goes on calling tools after the task has ended. So the
// session remembers the task that was cancelled (or superseded) while it
// ran, and every further call of the session is refused, naming that task
// and who cancelled it, until a new task starts in the session or the
// agent's turn ends (EndTurn). The cancel and its lift are in the task's
// ledger (RecCancel, RecLift), so a restart of the node rebuilds the
// refusal (Restored.Cancel) until one of them comes. Without this, the agent's next call after the
// barrier would find no task at all, and the hook would give no opinion: a
// cancelled task's agent would run on unrestricted.

// CancelledError refuses a call of a task that was cancelled or superseded,
// during its barrier or after it. It names the task, its status, who
// cancelled it and why. It unwraps to ErrTaskCancelling during the barrier
// and to ErrTaskTerminal after it.
type CancelledError struct {
	Task   string
	Status Status // cancelled or superseded
	By     string // who cancelled it ("" for a supersede)
	Reason string
	Ended  bool // the barrier has passed
}

func (e *CancelledError) Error() string {
	s := fmt.Sprintf("task %s was %s", e.Task, e.Status)
	if e.By != "" {
		s += " by " + e.By
	}
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s + "; harn refuses this agent's further tool calls until its turn ends or a new task starts"
}

func (e *CancelledError) Unwrap() error {
	if e.Ended {
		return ErrTaskTerminal
	}
	return ErrTaskCancelling
}

func (t *task) cancelledError() *CancelledError {
	st := t.cancelStatus
	if st == "" {
		st = t.status
	}
	return &CancelledError{Task: t.id, Status: st, By: t.cancelBy, Reason: t.cancelReason,
		Ended: t.state == StateTerminal}
}

// wasCancelled reports whether t is cancelling, quiescing, or ended
// cancelled or superseded.
func (t *task) wasCancelled() bool {
	return t.status == StatusCancelled || t.status == StatusSuperseded
}

// CancelledRefusal is the refusal of a call in a session with no running
// task whose last running task was cancelled or superseded and whose
// agent's turn has not ended since: a *RefusalError of the task check,
// wrapping a *CancelledError, recorded in that task's ledger. It returns
// nil when no cancellation refuses the session's calls (the hook then has
// no opinion).
func (rt *Runtime) CancelledRefusal(sessionID, capability string) (string, error) {
	s, err := rt.session(sessionID)
	if err != nil {
		return "", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.refusing
	if t == nil || (s.head != nil && s.head.state == StateRunning) {
		return "", nil
	}
	ce := t.cancelledError()
	t.refused(capability, string(CheckTask))
	rt.recLog(t, Record{Kind: RecRefused, Capability: capability, Status: string(CheckTask), Reason: "after cancellation"})
	return t.id, &RefusalError{Check: CheckTask, Capability: capability, Detail: ce.Error(), Err: ce}
}

// EndTurn is the end of the session's agent turn (its Stop hook, or the
// session's end): a cancelled task's refusal of the session's calls lifts.
// It reports whether one did.
func (rt *Runtime) EndTurn(sessionID string) bool {
	s, err := rt.session(sessionID)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.refusing
	if t == nil {
		return false
	}
	rt.recLog(t, Record{Kind: RecLift, Reason: "turn ended"}) // a restart must not bring it back
	s.refusing = nil
	s.signal()
	return true
}
