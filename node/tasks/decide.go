package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/text"
)

// maxReasonChars bounds a denial's reason as the agent shows it.
const maxReasonChars = 400

// Decide answers a hook: before a call, the runtime's checks of the
// session's active task (or the task named by HARN_TASK) decide, and a
// refusal is recorded in the runtime ledger; after a call, its end is
// reported. A session without a harn task gets no opinion.
func (h *Host) Decide(ctx context.Context, q Query) Verdict {
	task := q.Task
	if task == "" {
		if h.lookup(q.Session) == nil {
			return Verdict{Decision: DecideNone}
		}
		t, ok := h.rt.ActiveTask(q.Session)
		if !ok {
			if q.Phase == PhasePost {
				return Verdict{Decision: DecideNone}
			}
			// A task cancelled while it ran keeps refusing its agent's
			// calls until a new task starts or the agent's turn ends.
			if ct, err := h.rt.CancelledRefusal(q.Session, q.Tool); err != nil {
				return Verdict{Decision: DecideDeny, Task: ct, Call: q.Call, Reason: reasonOf(ct, err)}
			}
			return Verdict{Decision: DecideNone}
		}
		task = t
	}
	if q.Phase == PhasePost {
		if q.Call != "" {
			o := runtime.OutcomeSucceeded
			if q.Failed {
				o = runtime.OutcomeFailed
			}
			if err := h.rt.End(task, q.Call, o, nil); err != nil && !errors.Is(err, runtime.ErrNoCall) {
				h.log.Debug("call end", "task", task, "call", q.Call, "err", err)
			}
		}
		return Verdict{Decision: DecideNone, Task: task, Call: q.Call}
	}
	if q.Tool == "" {
		return Verdict{Decision: DecideDeny, Task: task, Reason: "harn: the hook named no tool; a task's calls must name theirs"}
	}
	call, err := h.rt.Begin(task, runtime.CallRequest{ID: q.Call, Capability: q.Tool, Input: q.Input})
	fresh := err == nil
	if errors.Is(err, runtime.ErrDuplicateCall) && q.Call != "" {
		// The agent ran its hook again for the same call: it gets the
		// first decision (or waits on the same confirmation), never a
		// fresh allow.
		call, err = h.rt.Prior(task, q.Call)
	}
	if err != nil {
		return Verdict{Decision: DecideDeny, Task: task, Call: q.Call, Reason: reasonOf(task, err)}
	}
	v := Verdict{Decision: DecideAllow, Task: task, Call: call.ID}
	if !call.Pending {
		if !fresh {
			if by, ok := h.confirmedBy(task, call.ID); ok {
				v.Reason = reasonOf(task, fmt.Errorf("call %s confirmed by %s", call.ID, by))
			}
		}
		return v
	}
	if fresh {
		h.askExternal(q.Session, task, call.ID, q.Tool, q.Input, q.Cwd)
		h.inputRequested(q.Session, call.ID, q.Tool, q.Input)
	}
	if q.Wait <= 0 {
		v.Decision = DecideConfirm
		v.Reason = reasonOf(task, fmt.Errorf("the call waits for a confirmation: `harn task confirm %s %s` (or deny)", task, call.ID))
		return v
	}
	defer h.dropAsk(task, call.ID) // the wait's end answers it, one way or the other
	wctx, cancel := context.WithTimeout(ctx, q.Wait)
	err = call.Wait(wctx)
	cancel()
	if err != nil {
		var de *runtime.DeniedError
		if !errors.As(err, &de) {
			why := "no confirmation within " + q.Wait.String()
			if derr := h.rt.Deny(task, call.ID, "harn", why); derr == nil {
				h.inputResolved(q.Session, call.ID, false, "harn", why)
			} else if p, perr := h.rt.Prior(task, call.ID); perr == nil && !p.Pending {
				// Confirmed in the same instant the wait ended: it runs.
				h.changed(q.Session)
				return h.confirmedVerdict(v)
			}
			err = fmt.Errorf("the call needs a confirmation (`harn task confirm %s %s`) and none came within %s", task, call.ID, q.Wait)
		} else if de.By == "runtime" {
			h.inputResolved(q.Session, call.ID, false, de.By, de.Reason)
		}
		v.Decision, v.Reason = DecideDeny, reasonOf(task, err)
		h.changed(q.Session)
		return v
	}
	h.changed(q.Session)
	return h.confirmedVerdict(v)
}

// confirmedVerdict is the allow of a confirmed call, with who confirmed it:
// the hook answers it with an explicit allow.
func (h *Host) confirmedVerdict(v Verdict) Verdict {
	by, _ := h.confirmedBy(v.Task, v.Call)
	v.Reason = reasonOf(v.Task, fmt.Errorf("call %s confirmed by %s", v.Call, by))
	return v
}

func reasonOf(task string, err error) string {
	return text.Clip(text.OneLine(fmt.Sprintf("harn task %s: %s", task, err.Error())), maxReasonChars)
}
