package cluster

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// raftRepeatWindow is how long the registry's log drops repeats of one
// warning or error (raft logs one per heartbeat while a peer is down).
const raftRepeatWindow = 10 * time.Second

// maxRepeatKeys bounds the messages a repeatFilter remembers.
const maxRepeatKeys = 256

// repeatFilter is a slog.Handler that passes a warning or error on, then
// drops the repeats of the same level and message for window; the next
// one after the window carries the count it dropped (suppressed_repeats).
// Lower levels pass untouched.
type repeatFilter struct {
	next   slog.Handler
	clock  clock.Clock
	window time.Duration
	st     *repeatState // shared by the handlers WithAttrs and WithGroup derive
}

type repeatState struct {
	mu   sync.Mutex
	seen map[string]*repeatRec
}

type repeatRec struct {
	at         time.Time
	suppressed int
}

func newRepeatFilter(next slog.Handler, clk clock.Clock, window time.Duration) *repeatFilter {
	return &repeatFilter{next: next, clock: clk, window: window, st: &repeatState{seen: map[string]*repeatRec{}}}
}

func (h *repeatFilter) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *repeatFilter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	key := r.Level.String() + "\x00" + r.Message
	now := h.clock.Now()
	h.st.mu.Lock()
	rec := h.st.seen[key]
	if rec != nil && now.Sub(rec.at) < h.window {
		rec.suppressed++
		h.st.mu.Unlock()
		return nil
	}
	dropped := 0
	if rec != nil {
		dropped = rec.suppressed
	}
	if len(h.st.seen) >= maxRepeatKeys {
		clear(h.st.seen)
	}
	h.st.seen[key] = &repeatRec{at: now}
	h.st.mu.Unlock()
	if dropped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed_repeats", dropped))
	}
	return h.next.Handle(ctx, r)
}

func (h *repeatFilter) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	return &c
}

func (h *repeatFilter) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	return &c
}
