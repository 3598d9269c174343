package runtime

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Restored is an ended task as the node rebuilt it from its ledger when it
// started again (see node/tasks, Rebuild). Live execution is never
// restored: a restored task is terminal, and one the restart cut short
// (running, cancelling, quiescing, blocked or queued when the node died)
// carries the reason in Interrupted and is shown as StateInterrupted.
type Restored struct {
	ID, Session     string
	Action          Action
	Status          Status // its terminal status (failed for an interrupted task)
	Interrupted     string // the reason it was cut short (node_restart), or ""
	By              string
	Created         time.Time
	RequiresSuccess bool
	Predecessor     string
	Seq             uint64         // its last ledger sequence number
	Holds           []RestoredHold // mutating calls of unknown outcome not yet acknowledged
	// Cancel, when set, is the cancellation of the task while it ran
	// whose refusal of the session's further calls had not lifted when the
	// node stopped (no RecLift after its RecCancel): the restored task
	// refuses them again, as CancelledRefusal says.
	Cancel *RestoredCancel
	// Refused counts the calls its ledger recorded as refused, and
	// RefusedCalls names the first MaxRefusedCalls.
	Refused      int
	RefusedCalls []RefusedCall
}

// RestoredCancel is a cancellation as the task's ledger recorded it.
type RestoredCancel struct {
	Status     Status // cancelled or superseded
	By, Reason string
}

// RestoredHold is a mutating call that ended outcome_unknown and that no
// task.ack has released.
type RestoredHold struct{ Call, Capability string }

// Restore puts an ended task back into the runtime so that it can be shown
// and acknowledged: Task and Session answer for it, its holds refuse the
// session's new mutations until Ack (recorded at the next sequence number),
// and every action that needs a live task refuses it as ended. The session
// is opened with cfg when it is not open. Restoring a task the runtime
// already knows is refused (ErrTaskExists).
func (rt *Runtime) Restore(r Restored, cfg SessionConfig) error {
	if r.ID == "" || r.Session == "" {
		return fmt.Errorf("%w: a restored task needs its id and session", ErrBadConfig)
	}
	if err := rt.OpenSession(r.Session, cfg); err != nil && !errors.Is(err, ErrSessionExists) {
		return err
	}
	s, err := rt.session(r.Session)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt.mu.Lock()
	if _, ok := rt.tasks[r.ID]; ok {
		rt.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrTaskExists, r.ID)
	}
	t := &task{s: s, id: r.ID, action: r.Action, state: StateTerminal, status: r.Status, by: r.By,
		created: r.Created, seq: r.Seq, requiresSuccess: r.RequiresSuccess, afterID: r.Predecessor,
		interrupted: r.Interrupted, stopped: true, calls: map[string]*call{}}
	t.counts.Refused = r.Refused
	if len(r.RefusedCalls) > MaxRefusedCalls {
		r.RefusedCalls = r.RefusedCalls[:MaxRefusedCalls]
	}
	t.refusals = slices.Clone(r.RefusedCalls)
	rt.tasks[r.ID] = t
	rt.mu.Unlock()
	if c := r.Cancel; c != nil {
		t.cancelStatus, t.cancelBy, t.cancelReason = c.Status, c.By, c.Reason
		if s.refusing == nil || !t.created.Before(s.refusing.created) {
			s.refusing = t
		}
	}
	for _, h := range r.Holds {
		s.holds = append(s.holds, hold{task: r.ID, call: h.Call, capability: h.Capability})
	}
	if s.last == nil || !t.created.Before(s.last.created) {
		s.last = t
	}
	// A task with a hold stays known whatever the bound on ended tasks:
	// its acknowledgement needs it.
	if len(r.Holds) == 0 {
		rt.retire(s, t)
	}
	s.signal()
	return nil
}
