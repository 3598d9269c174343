package tasks

import (
	"errors"
	"fmt"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/exec"
)

// Do runs an action on this node's runtimes.
func (h *Host) Do(a Action) (Result, error) {
	if h.ctx.Err() != nil {
		return Result{}, ErrClosed
	}
	res := Result{Node: h.cfg.Node}
	by := a.By
	if by == "" {
		by = "operator@" + h.cfg.Node
	}
	req := runtime.Request{Text: a.Text, Grants: a.Grants, RequiresSuccess: a.RequiresSuccess, By: by}
	if a.Op == OpHistory {
		return h.history(a)
	}
	if IsSessionOp(a.Op) {
		var hs *hosted
		var err error
		switch {
		case a.Op == OpStart && a.Agent == AgentHarn:
			if a.Session != "" || a.Command != "" || a.Launcher != "" || a.Harn == nil {
				return res, fmt.Errorf("%w: --agent harn starts a new session: give its model (--model M), not --exec, --launcher or --session", ErrBadAction)
			}
			id, oerr := h.OpenHarn(*a.Harn, a.Workdir)
			if oerr != nil {
				return res, oerr
			}
			if hs = h.lookup(id); hs != nil {
				res.Message = hs.notice // what of the project did not load
			}
		case a.Op == OpStart && a.Agent != "" && a.Agent != AgentHarn:
			return res, fmt.Errorf("%w: --agent %q; the node runs harn's own loop (--agent harn) or a command (--exec, --launcher)", ErrBadAction, clip(a.Agent))
		case a.Op == OpStart && (a.Command != "" || a.Launcher != ""):
			if a.Session != "" || (a.Command != "" && a.Launcher != "") {
				return res, fmt.Errorf("%w: give one of --exec, --launcher (a new session) or --session (an existing one)", ErrBadAction)
			}
			var id string
			var oerr error
			if a.Launcher != "" {
				id, oerr = h.OpenLauncher(a.Launcher, a.Workdir)
			} else {
				id, oerr = h.OpenExec(a.Command, a.Workdir)
			}
			if oerr != nil {
				return res, oerr
			}
			hs = h.lookup(id)
		case a.Session == "":
			return res, fmt.Errorf("%w: name the session (--session ID)", ErrBadAction)
		default:
			if hs, err = h.attach(a.Session); err == nil {
				err = hs.live(h)
			}
		}
		if err != nil {
			return res, err
		}
		res.Session = hs.id
		var v runtime.TaskView
		switch a.Op {
		case OpStart:
			v, err = h.rt.Start(hs.id, req)
		case OpFollowUp:
			v, err = h.rt.FollowUp(hs.id, req)
		case OpSupersede:
			v, err = h.rt.Supersede(hs.id, req)
		case OpSteer:
			if hs.ag != nil {
				var sr exec.SteerResult
				sr, err = harnSteer(hs, a.Task, a.Text)
				if err == nil {
					res.Steer, res.Message = &sr, sr.Message
					v, err = h.rt.Task(sr.Task)
				}
			} else if hs.ex != nil {
				var sr exec.SteerResult
				sr, err = hs.ex.Steer(a.Text)
				if err == nil {
					res.Steer, res.Message = &sr, sr.Message
					v, err = h.rt.Task(sr.Task)
				}
			} else {
				v, err = h.rt.Steer(hs.id, a.Text)
				res.Message = "steer recorded; an external agent takes no input from harn, so it reaches the agent only through its next prompt"
			}
		}
		if err != nil {
			return res, err
		}
		if a.Op != OpSteer || (res.Steer != nil && res.Steer.Mode == exec.SteerFollowUp) {
			h.remember(v.ID, a.Text)
		}
		res.Task = &v
		res.Text = h.text(v.ID)
		if a.Op == OpSupersede && v.State == runtime.StateQueued {
			// The replacement waits for the barrier of the task it cancelled.
			if sv, serr := h.rt.Session(hs.id); serr == nil && sv.Task != nil && sv.Task.ID != v.ID {
				res.Interrupt = h.interruptOf(hs.id, sv.Task.ID)
			}
		}
		h.changed(hs.id)
		return res, nil
	}
	if a.Op == OpUsage {
		since := time.Time{}
		if a.Since > 0 {
			since = time.Unix(int64(a.Since), 0)
		}
		u, err := h.Usage(a.Text, since)
		res.Usage = u
		return res, err
	}
	if a.Task == "" {
		return res, fmt.Errorf("%w: name the task (ID)", ErrBadAction)
	}
	var v runtime.TaskView
	var err error
	switch a.Op {
	case OpResume:
		v, err = h.rt.Resume(a.Task)
	case OpCancel:
		v, err = h.rt.Cancel(a.Task, by, a.Reason)
		if err == nil && v.State != runtime.StateTerminal {
			res.Interrupt = h.interruptOf(v.Session, v.ID)
		}
	case OpReplace:
		v, err = h.rt.Replace(a.Task, a.Text)
		if err == nil {
			h.remember(v.ID, a.Text)
		}
	case OpAck:
		if err = h.rt.Ack(a.Task, by); err == nil {
			v, err = h.rt.Task(a.Task)
		}
	case OpGrants:
		var g runtime.GrantsView
		if g, err = h.rt.Grants(a.Task); err == nil {
			res.Grants = &g
			v, err = h.rt.Task(a.Task)
		}
	case OpDigest:
		var d runtime.Handoff
		if d, err = h.rt.Digest(a.Task); err == nil {
			res.Digest = &d
			v, err = h.rt.Task(a.Task)
		}
	case OpConfirm, OpDeny:
		if a.Call == "" {
			return res, fmt.Errorf("%w: name the call (CALL)", ErrBadAction)
		}
		if a.Op == OpConfirm {
			err = h.rt.Confirm(a.Task, a.Call, by)
		} else {
			err = h.rt.Deny(a.Task, a.Call, by, a.Reason)
		}
		if err == nil {
			h.dropAsk(a.Task, a.Call)
			if v, err = h.rt.Task(a.Task); err == nil {
				h.inputResolved(v.Session, a.Call, a.Op == OpConfirm, by, a.Reason)
			}
		} else if a.Op == OpConfirm && KindOf(err) == KindRefused {
			// The re-check refused it: the runtime denied the call.
			var re *runtime.RefusalError
			if errors.As(err, &re) {
				if tv, terr := h.rt.Task(a.Task); terr == nil {
					h.inputResolved(tv.Session, a.Call, false, "runtime", err.Error())
				}
			}
		}
	case OpReduce:
		lvl, perr := runtime.ParseLevel(a.Level)
		if perr != nil {
			return res, perr
		}
		if a.Capability == "" {
			return res, fmt.Errorf("%w: name the capability (a name or a pattern such as mcp__github__*)", ErrBadAction)
		}
		if err = h.rt.ReduceBy(a.Task, a.Capability, lvl, by, a.Reason); err == nil {
			h.reduceChildren(a.Task, a.Capability, lvl, by, a.Reason)
			var g runtime.GrantsView
			if g, err = h.rt.Grants(a.Task); err == nil {
				res.Grants = &g
				v, err = h.rt.Task(a.Task)
			}
		}
	case OpEvents:
		// Only the events (and the session): a poll changes nothing, and
		// its answer must not wait on the task's lock or a view's refresh,
		// which a synced write of the loop can hold at that very moment.
		res.Events, err = h.Events(h.ctx, a.Task, a.Since, time.Duration(a.WaitMS)*time.Millisecond)
		if err == nil {
			res.Session, _ = h.SessionOfTask(a.Task)
		}
		return res, err
	case OpShow:
		if v, err = h.rt.Task(a.Task); err == nil {
			if sv, serr := h.rt.Session(v.Session); serr == nil {
				res.View = &sv
			}
			res.Output = h.outputOf(a.Task)
			res.Steps, res.StepsOmitted, err = h.steps(v.ID)
		}
	default:
		return res, fmt.Errorf("%w: unknown operation %q", ErrBadAction, a.Op)
	}
	if err != nil {
		return res, err
	}
	res.Task, res.Session, res.Text = &v, v.Session, h.text(v.ID)
	h.changed(v.Session)
	return res, nil
}

func (h *Host) text(task string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.texts[task]
}

func (h *Host) outputOf(task string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]string(nil), h.outputs[task]...)
	if m, ok := h.held[task]; ok && m != "" {
		out = append(out, m)
	}
	return out
}

// Kind classifies an action's error for the callers' exit codes.
type Kind int

// The kinds of errors.
const (
	KindInternal Kind = iota
	KindBadInput      // bad flags or input: exit 2
	KindNotFound      // no such session or task here: exit 3
	KindRefused       // a runtime rule refused the action: exit 15
)

// KindOf classifies err.
func KindOf(err error) Kind {
	switch {
	case errors.Is(err, ErrBadAction), errors.Is(err, ErrBadLauncher), errors.Is(err, runtime.ErrEmptyText), errors.Is(err, runtime.ErrTooLarge),
		errors.Is(err, runtime.ErrGrantSyntax), errors.Is(err, runtime.ErrNoProfile), errors.Is(err, ErrBadTaskID):
		return KindBadInput
	case errors.Is(err, runtime.ErrNoTask), errors.Is(err, runtime.ErrNoSession), errors.Is(err, ErrNoSession), errors.Is(err, ErrNoLauncher),
		errors.Is(err, runtime.ErrNoCall):
		return KindNotFound
	case errors.Is(err, ErrClosed):
		return KindInternal
	}
	var re *runtime.RefusalError
	var ae *runtime.AnswerError
	var ce *runtime.CeilingError
	var ak *runtime.AckRequiredError
	if errors.As(err, &re) || errors.As(err, &ae) || errors.As(err, &ce) || errors.As(err, &ak) {
		return KindRefused
	}
	for _, s := range []error{runtime.ErrSessionExists, runtime.ErrTaskActive, runtime.ErrNoActiveTask,
		runtime.ErrTaskCancelling, runtime.ErrTaskNotRunning, runtime.ErrTaskTerminal, runtime.ErrNotBlocked,
		runtime.ErrNotReplaceable, runtime.ErrNothingToAck, runtime.ErrDuplicateCall, runtime.ErrCallSettled,
		runtime.ErrNotPending, runtime.ErrAlreadyAnswered, runtime.ErrDenied, runtime.ErrLedger} {
		if errors.Is(err, s) {
			return KindRefused
		}
	}
	return KindInternal
}

// interruptOf says whether the cancellation of a running task reaches its
// agent as an interrupt. harn's own sessions (--exec, --launcher): their
// executor sends SIGINT to the agent's process group. An external agent's
// session (a task started with --session): harn did not start that
// process and holds no control channel to it (for Codex, no app-server
// connection for turn/interrupt), so it cannot interrupt the turn; the
// session's further tool calls are refused instead.
func (h *Host) interruptOf(session, task string) string {
	hs := h.lookup(session)
	switch {
	case hs == nil:
		return ""
	case hs.ag != nil:
		return fmt.Sprintf("sent: harn's own loop stops its model call and tool calls (a tool that does not stop within %s is outcome_unknown)", h.cfg.Grace)
	case hs.ex != nil:
		return fmt.Sprintf("sent: harn started this agent's process; its executor sends SIGINT to the process group (SIGKILL after %s)", h.cfg.Grace)
	default:
		agent := hs.agent
		if agent == "" {
			agent = "external"
		}
		return fmt.Sprintf("not possible: harn did not start this %s agent's process and holds no channel to interrupt its turn; "+
			"its further tool calls are refused, naming task %s, until its turn ends or a new task starts", agent, task)
	}
}
