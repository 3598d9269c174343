package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/text"
)

// Bounds of a session's history.
const (
	// keepHistory bounds the events a session's history keeps; past it
	// the oldest quarter goes (the cursor keeps counting).
	keepHistory = 16384
	// maxHistoryBatch bounds the events of one answer.
	maxHistoryBatch = 2048
)

// sessionLog is a harn session's events in order, across tasks.
type sessionLog struct {
	base int // the cursor of log[0]
	log  []agent.Event
	used int // input tokens of the last model call
}

// add appends e and returns its cursor.
func (l *sessionLog) add(e agent.Event) int {
	if len(l.log) >= keepHistory {
		drop := keepHistory / 4
		l.log = append(l.log[:0], l.log[drop:]...)
		l.base += drop
	}
	l.log = append(l.log, e)
	if e.Type == agent.EvModel && e.Usage != nil {
		if e.Usage.Input > 0 {
			l.used = e.Usage.Input
		} else if e.Usage.Estimated > 0 {
			l.used = e.Usage.Estimated
		}
	}
	return l.base + len(l.log) - 1
}

// historySince returns the session's events from cursor from on (from
// the oldest kept one when from is older), at most maxHistoryBatch, and
// the cursor after them; it waits up to wait for one when there is none.
func (s *harnState) historySince(ctx context.Context, from int, wait time.Duration) ([]agent.Event, int, int) {
	deadline := time.NewTimer(wait) //clock:real a long poll's bound is the caller's real wait
	defer deadline.Stop()
	for {
		s.mu.Lock()
		l := &s.session
		from = max(from, l.base)
		end := l.base + len(l.log)
		w, used := s.wake, l.used
		if from < end {
			n := min(end-from, maxHistoryBatch)
			out := append([]agent.Event(nil), l.log[from-l.base:from-l.base+n]...)
			s.mu.Unlock()
			return out, from + n, used
		}
		s.mu.Unlock()
		select {
		case <-w:
		case <-deadline.C:
			return nil, from, used
		case <-ctx.Done():
			return nil, from, used
		}
	}
}

// history answers OpHistory for a harn session of this node.
func (h *Host) history(a Action) (Result, error) {
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
	wait := min(max(time.Duration(a.WaitMS)*time.Millisecond, 0), maxEventsPoll)
	var ci *ContextInfo
	switch {
	case hs == nil:
		// Not hosted by this run (the node restarted): the stored history.
		s, err := h.storedHistory(id)
		if err != nil {
			return res, err
		}
		if s == nil {
			return res, fmt.Errorf("%w %q", ErrNoSession, a.Session)
		}
		evs, next, used := s.historySince(h.ctx, max(a.Since, 0), wait)
		res.Session, res.Events, res.Next = id, evs, next
		ci = &ContextInfo{Used: used}
		if l, err := h.contexts.Lookup(id); err == nil {
			ci.Budget = l.Report().Budget.Usable
		}
	case hs.harn == nil || hs.ag == nil:
		return res, fmt.Errorf("%w: session %s does not run harn's own loop", ErrBadAction, hs.id)
	default:
		evs, next, used := hs.harn.historySince(h.ctx, max(a.Since, 0), wait)
		res.Session, res.Events, res.Next = hs.id, evs, next
		ci = &ContextInfo{Used: used, Budget: hs.ag.Model().UsableInput()}
		if c, ok := hs.ag.Context().(agent.CompactionReporter); ok {
			ci.Compaction, ci.CompactedAt = c.LastCompaction()
		}
	}
	res.Context = ci
	if sv, err := h.rt.Session(id); err == nil {
		res.View = &sv
		for _, q := range sv.Queue { // every follow-up, whoever queued it
			res.QueueText = append(res.QueueText, text.Clip(h.text(q.ID), taskwire.QueueTextBytes))
		}
		if sv.Task != nil {
			v := *sv.Task
			res.Task = &v
			res.Text = h.text(v.ID)
		}
	} else if err != nil && !isNoSession(err) {
		return res, err
	}
	return res, nil
}

func isNoSession(err error) bool { return err != nil && KindOf(err) == KindNotFound }
