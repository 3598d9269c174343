package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a clock that moves only when told. Its timers and tickers fire
// during Advance (or Set), in the order of their due times: a ticker that
// falls due several times within one Advance ticks each time its channel
// has room, like a time.Ticker whose reader is slow.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	waiters map[*fakeWaiter]struct{}
	armed   chan struct{} // closed and replaced whenever a waiter is armed
	inline  bool          // AfterFunc callbacks run on the advancing goroutine
}

// fakeWaiter is one armed timer, ticker or AfterFunc.
type fakeWaiter struct {
	f      *Fake
	when   time.Time
	seq    uint64        // arming order, to break ties
	period time.Duration // > 0 for a ticker
	ch     chan time.Time
	fn     func()
}

// NewFake returns a fake clock set to t.
func NewFake(t time.Time) *Fake {
	return &Fake{now: t, waiters: map[*fakeWaiter]struct{}{}, armed: make(chan struct{})}
}

// NewInlineFake is NewFake whose AfterFunc callbacks run on the goroutine
// that calls Advance (or Set), one after the other, so that a test sees
// their effects when Advance returns. A callback must not wait for
// another goroutine that advances the same clock.
func NewInlineFake(t time.Time) *Fake {
	f := NewFake(t)
	f.inline = true
	return f
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the fake time forward by d, firing what falls due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	to := f.now.Add(d)
	f.mu.Unlock()
	f.Set(to)
}

// Set moves the fake time to t (never backward), firing what falls due in
// time order.
func (f *Fake) Set(t time.Time) {
	for {
		f.mu.Lock()
		w := f.nextDueLocked(t)
		if w == nil {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		if w.when.After(f.now) {
			f.now = w.when
		}
		now := f.now
		if w.period > 0 {
			w.when = w.when.Add(w.period)
			f.seq++
			w.seq = f.seq
		} else {
			delete(f.waiters, w)
		}
		ch, fn, inline := w.ch, w.fn, f.inline
		f.mu.Unlock()
		if fn != nil && inline {
			fn()
		} else if fn != nil {
			go fn()
		} else {
			select {
			case ch <- now:
			default: // like time's channels: a tick nobody read is dropped
			}
		}
	}
}

func (f *Fake) nextDueLocked(t time.Time) *fakeWaiter {
	var best *fakeWaiter
	for w := range f.waiters {
		if w.when.After(t) {
			continue
		}
		if best == nil || w.when.Before(best.when) || (w.when.Equal(best.when) && w.seq < best.seq) {
			best = w
		}
	}
	return best
}

// Waiters is the number of armed timers and tickers.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil waits until at least n timers or tickers are armed, or
// timeout passes (real time); it reports whether n were reached. Tests
// call it before Advance so that a goroutine has armed its timer.
func (f *Fake) BlockUntil(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		got, armed := len(f.waiters), f.armed
		f.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-armed:
		case <-deadline.C:
			return false
		}
	}
}

// NextDue is the due time of the earliest armed timer or ticker.
func (f *Fake) NextDue() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var best time.Time
	ok := false
	for w := range f.waiters {
		if !ok || w.when.Before(best) {
			best, ok = w.when, true
		}
	}
	return best, ok
}

func (f *Fake) arm(w *fakeWaiter, d time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, was := f.waiters[w]
	w.when = f.now.Add(d)
	f.seq++
	w.seq = f.seq
	f.waiters[w] = struct{}{}
	close(f.armed)
	f.armed = make(chan struct{})
	return was
}

func (f *Fake) disarm(w *fakeWaiter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, was := f.waiters[w]
	delete(f.waiters, w)
	return was
}

// NewTicker returns a fake ticker.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	w := &fakeWaiter{f: f, period: d, ch: make(chan time.Time, 1)}
	f.arm(w, d)
	return (*fakeTicker)(w)
}

// NewTimer returns a fake timer.
func (f *Fake) NewTimer(d time.Duration) Timer {
	w := &fakeWaiter{f: f, ch: make(chan time.Time, 1)}
	f.arm(w, d)
	if d <= 0 {
		f.Set(f.Now()) // due now: fire at once, as time.NewTimer(0) does
	}
	return (*fakeTimer)(w)
}

// AfterFunc calls fn in its own goroutine once the fake time passes d
// (an inline fake: during the Advance that passes it, even for d <= 0, so
// that fn never runs under a lock its caller holds).
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	w := &fakeWaiter{f: f, fn: fn}
	f.arm(w, d)
	if d <= 0 && !f.inline {
		f.Set(f.Now())
	}
	return (*fakeTimer)(w)
}

type fakeTicker fakeWaiter

func (t *fakeTicker) C() <-chan time.Time { return t.ch }
func (t *fakeTicker) Stop()               { t.f.disarm((*fakeWaiter)(t)) }
func (t *fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	w := (*fakeWaiter)(t)
	t.f.mu.Lock()
	w.period = d
	t.f.mu.Unlock()
	t.f.arm(w, d)
}

type fakeTimer fakeWaiter

func (t *fakeTimer) C() <-chan time.Time { return t.ch }
func (t *fakeTimer) Stop() bool          { return t.f.disarm((*fakeWaiter)(t)) }
func (t *fakeTimer) Reset(d time.Duration) bool {
	w := (*fakeWaiter)(t)
	// Like time.Timer since Go 1.23: a stale value is not received after
	// a Reset.
	if w.ch != nil {
		select {
		case <-w.ch:
		default:
		}
	}
	was := t.f.arm(w, d)
	if d <= 0 {
		t.f.Set(t.f.Now())
	}
	return was
}

// sortedDue is used by tests: the due times of the armed waiters, in order.
func (f *Fake) sortedDue() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]time.Time, 0, len(f.waiters))
	for w := range f.waiters {
		out = append(out, w.when)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}
