package notify

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/harn-dev/harn/util/text"
)

// item is one rendered message waiting for its webhook.
type item struct {
	req    Request
	kind   Kind
	queued time.Time
}

// worker owns one webhook's queue and the one goroutine that delivers it,
// in order, one message at a time.
type worker struct {
	e      *Engine
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}

	mu       sync.Mutex
	hook     Webhook
	queue    []item
	inflight bool
	st       WebhookStats
}

func newWorker(e *Engine, h Webhook) *worker {
	ctx, cancel := context.WithCancel(e.ctx)
	return &worker{e: e, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), hook: h}
}

func (w *worker) sameTarget(h Webhook) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hook.URL == h.URL && w.hook.Format == h.Format
}

func (w *worker) setHook(h Webhook) {
	w.mu.Lock()
	w.hook = h
	w.mu.Unlock()
}

// offer queues t when the webhook wants its kind. It never blocks: a full
// queue drops its oldest waiting message and counts it.
func (w *worker) offer(t Transition, now time.Time) {
	w.mu.Lock()
	if !w.hook.Wants(t.Kind) {
		w.mu.Unlock()
		return
	}
	req, err := Render(w.hook, t)
	if err != nil {
		w.st.Failed++
		w.setErr(err, now)
		w.mu.Unlock()
		return
	}
	if len(w.queue) >= w.e.cfg.QueueSize {
		w.queue = slices.Delete(w.queue, 0, 1)
		w.st.Dropped++
	}
	w.queue = append(w.queue, item{req: req, kind: t.Kind, queued: now})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) setErr(err error, now time.Time) {
	w.st.LastError = text.Clip(text.OneLine(err.Error()), 200)
	w.st.LastErrorAt = now
}

func (w *worker) stats() WebhookStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.st
	s.ID, s.URL, s.Format, s.On = w.hook.ID, w.hook.Redacted(), w.hook.Format, slices.Clone(w.hook.On)
	s.Queued = len(w.queue)
	if w.inflight {
		s.Queued++
	}
	return s
}

func (w *worker) run() {
	defer w.e.wg.Done()
	for {
		it, ok := w.next()
		if !ok {
			return
		}
		w.deliver(it)
		w.mu.Lock()
		w.inflight = false
		w.mu.Unlock()
	}
}

// next takes the oldest waiting message, waiting for one; false when the
// worker is stopped.
func (w *worker) next() (item, bool) {
	for {
		if w.ctx.Err() != nil {
			return item{}, false
		}
		w.mu.Lock()
		if len(w.queue) > 0 {
			it := w.queue[0]
			w.queue = slices.Delete(w.queue, 0, 1)
			w.inflight = true
			w.mu.Unlock()
			return it, true
		}
		w.mu.Unlock()
		select {
		case <-w.ctx.Done():
			return item{}, false
		case <-w.wake:
		}
	}
}

// deliver sends one message, retrying with exponential backoff and jitter
// until it is accepted, refused for good, out of attempts or too old, or
// the worker stops.
func (w *worker) deliver(it item) {
	cfg := w.e.cfg
	for attempt := 1; ; attempt++ {
		err := w.e.sender.Send(w.ctx, it.req)
		if w.ctx.Err() != nil {
			return
		}
		now := w.e.clk.Now()
		w.mu.Lock()
		if err == nil {
			w.st.Sent++
			w.inflight = false
			w.mu.Unlock()
			return
		}
		w.setErr(err, now)
		var se *StatusError
		errors.As(err, &se)
		var pe interface{ Permanent() bool }
		permanent := errors.As(err, &pe) && pe.Permanent()
		giveUp := permanent || (cfg.MaxAttempts > 0 && attempt >= cfg.MaxAttempts) || now.Sub(it.queued) >= cfg.MaxAge
		if giveUp {
			w.st.Failed++
			w.inflight = false
		} else {
			w.st.Retries++
		}
		id := w.hook.ID
		w.mu.Unlock()
		if giveUp {
			w.e.log.Warn("notify: webhook message given up", "webhook", id, "kind", string(it.kind),
				"attempts", attempt, "err", err)
			return
		}
		delay := cfg.Jitter(cfg.Backoff(attempt))
		if se != nil && se.RetryAfter > delay {
			delay = min(se.RetryAfter, cfg.BackoffMax)
		}
		if !w.sleep(delay) {
			return
		}
	}
}

// sleep waits d on the engine's clock; false when the worker stopped first.
func (w *worker) sleep(d time.Duration) bool {
	ch := make(chan struct{})
	t := w.e.clk.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return true
	case <-w.ctx.Done():
		t.Stop()
		return false
	}
}
