package tasks

import (
	"errors"
	"fmt"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	rcontext "github.com/harn-dev/harn/runtime/context"
	"github.com/harn-dev/harn/util/text"
)

// contextOp answers OpPin and OpCompact on a harn session of this node
// (live, or ended: its stored context). While a task runs, both wait for
// its next step boundary: the lane applies them when the loop next builds
// its working set, or when the turn ends.
func (h *Host) contextOp(a Action) (Result, error) {
	res := Result{Node: h.cfg.Node}
	if a.Session == "" {
		return res, fmt.Errorf("%w: name the session (--session ID)", ErrBadAction)
	}
	id := a.Session
	hs := h.lookup(id)
	if hs == nil && h.cfg.Sessions != nil {
		st, err := h.cfg.Sessions.Resolve(a.Session)
		if err != nil {
			return res, err
		}
		id = st.SessionID
		hs = h.lookup(id)
	}
	if hs != nil && hs.ag == nil {
		return res, fmt.Errorf("%w: session %s does not run harn's own loop: it has no harn context", ErrBadAction, hs.id)
	}
	lane, err := h.contexts.Lookup(id)
	if err != nil {
		return res, fmt.Errorf("%w: %s has no harn context on node %s", ErrBadAction, clip(id), h.cfg.Node)
	}
	res.Session = id
	running, busy := h.rt.ActiveTask(id)
	if hs != nil {
		h.mu.Lock()
		busy = busy && !hs.ended
		h.mu.Unlock()
	}
	switch a.Op {
	case OpPin:
		applied, err := lane.PinAt(a.Text, busy)
		switch {
		case errors.Is(err, rcontext.ErrPinEmpty):
			return res, fmt.Errorf("%w: give the text to pin", runtime.ErrEmptyText)
		case errors.Is(err, rcontext.ErrPinTooLarge):
			return res, fmt.Errorf("%w: a pin is at most %d bytes (it stays in every request)", runtime.ErrTooLarge, rcontext.MaxPinBytes)
		case errors.Is(err, rcontext.ErrTooManyPending):
			return res, fmt.Errorf("%w: %w", ErrBusyContext, err)
		case err != nil:
			return res, err
		}
		if applied {
			res.Message = "pinned into session " + id + "'s context: every request carries it"
		} else {
			res.Message = "pinned: it enters session " + id + "'s context at task " + running + "'s next step boundary (after its running tool calls return)"
		}
		h.note(hs, running, "pinned: "+text.Clip(text.OneLine(a.Text), 200))
	case OpCompact:
		ev, ran, ok, err := lane.CompactAt(h.ctx, busy)
		switch {
		case errors.Is(err, rcontext.ErrNoBudget):
			return res, fmt.Errorf("%w: %w", ErrBusyContext, err)
		case err != nil:
			return res, err
		case !ran:
			res.Message = "the compaction runs at task " + running + "'s next step boundary (after its running tool calls return)"
		case !ok:
			res.Message = "nothing to compact: session " + id + "'s context holds no completed work before its newest message that a checkpoint would make smaller"
		default:
			res.Message = fmt.Sprintf("compacted session %s's context (%s): %d → %d tokens, %d items archived (recallable)",
				id, ev.Method, ev.Before, ev.After, ev.Archived)
		}
		h.note(hs, running, res.Message)
	}
	h.changed(id)
	return res, nil
}

// ErrBusyContext refuses a context op the session's context cannot take
// now.
var ErrBusyContext = errors.New("tasks: the context cannot take this now")

// note adds a status line to a hosted harn session's history (the TUI
// shows it).
func (h *Host) note(hs *hosted, task, s string) {
	if hs == nil || hs.harn == nil {
		return
	}
	hs.harn.add(agent.Event{Type: agent.EvStatus, Task: task, Text: s, At: h.cfg.Clock.Now()})
}

// boundary applies what waits for a step boundary of a session's context
// once its turn has ended (a pin or compaction asked for during its last
// step), off the loop's goroutine: a compaction may call the model.
func (h *Host) boundary(session string) {
	lane, err := h.contexts.Lookup(session)
	if err != nil {
		return
	}
	if pins, compact := lane.Pending(); pins == 0 && !compact {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		lane.Boundary(h.ctx)
	}()
}
