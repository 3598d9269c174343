package context

import (
	stdctx "context"
	"errors"
	"fmt"

	"github.com/harn-dev/harn/runtime/agent"
)

// An operator's pin and compaction of a session's context. Both change
// the working set, so both wait for a step boundary while a turn runs: a
// message put between an assistant's tool calls and their results would
// break the exchange the provider expects. The lane holds them until the
// loop next builds its working set (WorkingSet, before the next model
// call, after the step's results are in), or until the host says the
// turn ended (Boundary).

// Bounds of the operator's ops.
const (
	// MaxPinBytes bounds one pinned text: a pin stays in every request.
	MaxPinBytes = 16 << 10
	// maxPendingPins bounds the pins waiting for a boundary.
	maxPendingPins = 16
)

// Errors of the ops.
var (
	ErrPinTooLarge    = fmt.Errorf("context: a pinned text is at most %d bytes", MaxPinBytes)
	ErrPinEmpty       = errors.New("context: the pinned text is empty")
	ErrTooManyPending = fmt.Errorf("context: %d pins already wait for the turn's next step", maxPendingPins)
	ErrNoBudget       = errors.New("context: the session has made no model call yet, so it has no budget to compact against")
)

// ops are a lane's operator requests that wait for a step boundary,
// guarded by the Space's mu.
type ops struct {
	pins    []agent.Message
	compact bool
}

// PinAt pins text into the working set: a user message that stays in
// every request (only the rolling summary of last resort collapses it).
// It is applied now when the turn is idle (busy false) and no tool
// exchange is open, else at the next step boundary; applied says which.
func (c *Lane) PinAt(text string, busy bool) (applied bool, err error) {
	switch {
	case text == "":
		return false, ErrPinEmpty
	case len(text) > MaxPinBytes:
		return false, ErrPinTooLarge
	}
	m := agent.Message{Role: agent.RoleUser, Text: text}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if busy || c.exchangeOpenLocked() || len(c.ops().pins) > 0 {
		if len(c.ops().pins) >= maxPendingPins {
			return false, ErrTooManyPending
		}
		c.ops().pins = append(c.ops().pins, m)
		return false, nil
	}
	return true, c.appendLocked([]agent.Message{m}, true, true)
}

// CompactAt compacts the working set as far as it goes: every completed
// tool exchange and answer before the newest unit leaves it (condensed by
// the model when the lane's LLM compaction is on, else the deterministic
// checkpoint), whatever the admission line. Busy, it waits for the next
// step boundary (ran false); else it runs now and returns what it did
// (ok false: nothing was left to compact, or a checkpoint would not make
// the working set smaller).
func (c *Lane) CompactAt(ctx stdctx.Context, busy bool) (ev Compaction, ran, ok bool, err error) {
	c.s.mu.Lock()
	if busy || c.exchangeOpenLocked() {
		c.ops().compact = true
		c.s.mu.Unlock()
		return Compaction{}, false, false, nil
	}
	c.s.mu.Unlock()
	ev, ok, err = c.compactNow(ctx)
	return ev, true, ok, err
}

// Boundary applies what waits for a step boundary: the pins, then a
// requested compaction. The loop's WorkingSet calls it; the host calls it
// when a turn ends. With a tool exchange still open it does nothing.
func (c *Lane) Boundary(ctx stdctx.Context) {
	c.s.mu.Lock()
	o := c.opsIf()
	if o == nil || (len(o.pins) == 0 && !o.compact) || c.exchangeOpenLocked() {
		c.s.mu.Unlock()
		return
	}
	pins, compact := o.pins, o.compact
	o.pins, o.compact = nil, false
	if len(pins) > 0 {
		if err := c.appendLocked(pins, true, true); err != nil {
			c.s.log.Warn("context: pins not stored", "session", c.session, "err", err)
		}
	}
	c.s.mu.Unlock()
	if compact {
		if ev, ok, err := c.compactNow(ctx); err != nil {
			c.s.log.Warn("context: the requested compaction failed", "session", c.session, "err", err)
		} else if ok {
			c.s.log.Info("context: the requested compaction ran", "session", c.session, "method", ev.Method)
		}
	}
}

// Pending is how many pins wait for a boundary, and whether a compaction
// does.
func (c *Lane) Pending() (pins int, compact bool) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if o := c.opsIf(); o != nil {
		return len(o.pins), o.compact
	}
	return 0, false
}

// compactNow runs the operator's compaction: target 0, so that every
// completed unit but the newest leaves the working set.
func (c *Lane) compactNow(ctx stdctx.Context) (Compaction, bool, error) {
	s := c.s
	s.mu.Lock()
	budget := c.l.budget
	if budget <= 0 {
		s.mu.Unlock()
		return Compaction{}, false, ErrNoBudget
	}
	note := "asked for by the operator"
	if cond := c.condenser(); cond != nil {
		p := c.planLocked(budget, 0, false, nil)
		rev := c.l.rev
		if !p.any() {
			s.mu.Unlock()
			return Compaction{}, false, nil
		}
		s.mu.Unlock()
		head, err := c.condense(ctx, cond, p)
		s.mu.Lock()
		switch {
		case err != nil:
			note += "; the condensation failed: " + err.Error()
		case c.l.rev != rev:
			note += "; the history moved during the condensation"
		default:
			cp := c.checkpoint(p, MethodLLM, head, "asked for by the operator")
			if c.tokensAfter(cp) >= p.before {
				note += "; the condensation would not make it smaller"
				break
			}
			ev, err := c.storeLocked(cp, archivedItems(p))
			s.mu.Unlock()
			c.emit(ev, err)
			return ev, err == nil, err
		}
	}
	p := c.planLocked(budget, 0, false, nil)
	if !p.any() {
		s.mu.Unlock()
		return Compaction{}, false, nil
	}
	cp := c.checkpoint(p, MethodFallback, "", note)
	if c.tokensAfter(cp) >= p.before {
		// a checkpoint's reference lines would cost what they archive
		s.mu.Unlock()
		return Compaction{}, false, nil
	}
	ev, err := c.storeLocked(cp, archivedItems(p))
	s.mu.Unlock()
	c.emit(ev, err)
	return ev, err == nil, err
}

// exchangeOpenLocked reports whether the lane ends in an assistant's tool
// calls whose results are not all in: a message now would land inside
// the exchange.
func (c *Lane) exchangeOpenLocked() bool {
	msgs := c.l.msgs
	results := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i].rec.Msg
		if m == nil {
			continue
		}
		switch {
		case m.Role == agent.RoleTool:
			results++
		case m.Role == agent.RoleAssistant && len(m.Calls) > 0:
			return results < len(m.Calls)
		default:
			return false
		}
	}
	return false
}

// ops returns the lane's pending ops, making them (mu held).
func (c *Lane) ops() *ops {
	if c.pending == nil {
		c.pending = &ops{}
	}
	return c.pending
}

// opsIf returns the lane's pending ops or nil (mu held).
func (c *Lane) opsIf() *ops { return c.pending }
