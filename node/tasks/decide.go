package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/text"
)

// The phases of a hook's question.
const (
	PhasePre  = "pre"  // before a tool call (PreToolUse): may it run?
	PhasePost = "post" // after it (PostToolUse): how it ended
)

// The decisions.
const (
	DecideAllow = "allow" // the task's grants allow the call
	DecideDeny  = "deny"  // refused: Reason says why
	DecideNone  = "none"  // no harn task governs the session: no opinion
)

// Query is a hook's question about one tool call of an agent.
type Query struct {
	Phase   string
	Session string // the agent's session id (the hook payload's)
	Task    string // HARN_TASK from the agent's environment, when set
	Tool    string
	Input   []byte // the raw tool_input JSON: matched, digested, never stored
	Call    string // the agent's call id (tool_use_id)
	Failed  bool   // post: the call failed
	// Wait bounds how long a call that needs a confirmation waits for
	// `harn task confirm`; without one in time it is denied.
	Wait time.Duration
}

// Verdict answers a Query.
type Verdict struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	Task     string `json:"task,omitempty"`
	Call     string `json:"call,omitempty"`
}

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
	if err != nil {
		if errors.Is(err, runtime.ErrDuplicateCall) {
			// The agent ran its hook again for the same call: it passed.
			return Verdict{Decision: DecideAllow, Task: task, Call: q.Call}
		}
		return Verdict{Decision: DecideDeny, Task: task, Call: q.Call, Reason: reasonOf(task, err)}
	}
	v := Verdict{Decision: DecideAllow, Task: task, Call: call.ID}
	if call.Pending {
		wctx, cancel := context.WithTimeout(ctx, q.Wait)
		err := call.Wait(wctx)
		cancel()
		if err != nil {
			var de *runtime.DeniedError
			if !errors.As(err, &de) {
				_ = h.rt.Deny(task, call.ID, "harn", "no confirmation within "+q.Wait.String())
				err = fmt.Errorf("the call needs a confirmation (`harn task confirm %s %s`) and none came within %s", task, call.ID, q.Wait)
			}
			v.Decision, v.Reason = DecideDeny, reasonOf(task, err)
		}
		h.changed(q.Session)
	}
	return v
}

func reasonOf(task string, err error) string {
	return text.Clip(text.OneLine(fmt.Sprintf("harn task %s: %s", task, err.Error())), maxReasonChars)
}
