package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/text"
)

// ExitCallsRefused: the task ended, but the runtime refused some of its
// calls (its grants, a protected path, a revocation): it did not do all
// it was asked. The output names them.
const ExitCallsRefused = 19

// askEndReason is the session.end reason of a session harn ask ends.
const askEndReason = "ask_returned"

// askEndTimeout bounds the end of an ask's session.
const askEndTimeout = 5 * time.Second

// askEvent is one line of `harn ask --json`: the loop's event, the
// session it belongs to, and on the task's turn.end the calls the
// runtime refused.
type askEvent struct {
	taskwire.Event
	Session      string                 `json:"session"`
	Refused      int                    `json:"refused,omitempty"`
	RefusedCalls []taskwire.RefusedCall `json:"refused_calls,omitempty"`
}

// askOutcome follows an ask's task: the calls refused, and the calls
// that wait for a confirmation (said once each on stderr, with the
// commands that answer them).
type askOutcome struct {
	task, session string
	refused       int
	refusedCalls  []taskwire.RefusedCall
	asked         map[string]bool
}

// see notes one event of the stream.
func (o *askOutcome) see(c *cobra.Command, e taskwire.Event) {
	if e.Task != o.task {
		return
	}
	switch e.Type {
	case "tool.refused":
		o.refused++
		if len(o.refusedCalls) < taskwire.MaxRefusedCalls {
			o.refusedCalls = append(o.refusedCalls, taskwire.RefusedCall{Capability: e.Tool})
		}
	case "input.requested":
		if hook.AsJSON(c) || o.asked[e.Call] {
			return
		}
		if o.asked == nil {
			o.asked = map[string]bool{}
		}
		o.asked[e.Call] = true
		fmt.Fprintln(c.ErrOrStderr(), confirmHint(e.Tool, o.task, e.Call, o.session))
	}
}

// confirmHint is what a person reads when a call of their ask waits: the
// commands that answer it, as they run, and the profiles that would not
// ask.
func confirmHint(tool, task, call, session string) string {
	return fmt.Sprintf("harn: %s waits for your confirmation (task %s, call %s, session %s): run `harn task confirm %s %s` to let it run "+
		"or `harn task deny %s %s` to refuse it, or answer it on the board; "+
		"to run without asking, ask with --profile edit (writes and edits) or --profile full (every tool)",
		text.Sanitize(text.Clip(tool, 64)), text.Sanitize(task), text.Sanitize(call), text.Sanitize(session),
		text.Sanitize(task), text.Sanitize(call), text.Sanitize(task), text.Sanitize(call))
}

// settle reads the task's own count of refused calls (the node's, with
// the checks that refused them) once its turn ended, when the stream
// showed any.
func (o *askOutcome) settle(ctx context.Context, call func(context.Context, taskwire.Action) (taskwire.Result, error)) {
	if o.refused == 0 {
		return
	}
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	r, err := call(ctx, taskwire.Action{Op: taskwire.OpShow, Task: o.task})
	if err == nil && r.Task != nil && r.Task.Refused > 0 {
		o.refused, o.refusedCalls = r.Task.Refused, r.Task.RefusedCalls
	}
}

// result is the ask's exit: 0, or ExitCallsRefused naming the refused
// calls (the answer is printed already).
func (o *askOutcome) result(c *cobra.Command) error {
	if o.refused == 0 {
		return nil
	}
	return hook.WithCode(ExitCallsRefused, fmt.Errorf("task %s succeeded, but harn refused %s: %s; `harn task show %s` lists them; "+
		"ask with a wider --profile (harn profiles lists them) to allow them", text.Sanitize(o.task), countOf(o.refused, "call", "calls"),
		refusedList(o.refusedCalls, o.refused), text.Sanitize(o.task)))
}

// refusedList names refused calls: "shell (grant), write (grant)", and
// how many more.
func refusedList(rs []taskwire.RefusedCall, n int) string {
	var parts []string
	for _, r := range rs {
		s := text.Sanitize(text.Clip(r.Capability, 64))
		if r.Check != "" {
			s += " (" + text.Sanitize(r.Check) + ")"
		}
		parts = append(parts, s)
	}
	if more := n - len(rs); more > 0 {
		parts = append(parts, fmt.Sprintf("%d more", more))
	}
	return strings.Join(parts, ", ")
}

func countOf(n int, one, many string) string { return fmt.Sprintf("%d %s", n, plural(n, one, many)) }

// endAskSession ends the session an ask opened (or reopened), on its
// node, waiting for the end to be recorded: after harn ask returns the
// session is ended in every roster. A failure is said on stderr.
func endAskSession(c *cobra.Command, cl *client, p hook.Place, session string) {
	ctx, cancel := context.WithTimeout(context.Background(), askEndTimeout)
	defer cancel()
	if _, err := coord(ctx, cl, p, wire.CoordEnd, wire.CoordBody{Session: session, Reason: askEndReason}); err != nil {
		fmt.Fprintf(c.ErrOrStderr(), "harn: session %s was not ended: %s\n", session, text.OneLine(hook.UserText(err)))
	}
}

// ExitInterrupted: harn ask was interrupted (SIGINT, SIGTERM): its task
// was cancelled and its session ended.
const ExitInterrupted = 130

// interruptAsk cancels the ask's task when the ask is interrupted; the
// session's end follows (deferred by runAsk).
func interruptAsk(c *cobra.Command, call func(context.Context, taskwire.Action) (taskwire.Result, error), task string) error {
	ctx, cancel := context.WithTimeout(context.Background(), askEndTimeout)
	defer cancel()
	_, err := call(ctx, taskwire.Action{Op: taskwire.OpCancel, Task: task, Reason: "harn ask was interrupted"})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(c.ErrOrStderr(), "harn: task %s was not cancelled: %s\n", task, text.OneLine(hook.UserText(err)))
	}
	return hook.WithCode(ExitInterrupted, fmt.Errorf("%w: interrupted: task %s cancelled", ErrBadAsk, task))
}
