package notify

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
	"google.golang.org/protobuf/proto"
)

// fakeClock is a Clock that moves only when told. Advance runs the due
// callbacks in its own goroutine, in time order, after releasing its lock.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	waits  []time.Duration // every AfterFunc duration asked for, in order
}

type fakeTimer struct {
	c    *fakeClock
	at   time.Time
	d    time.Duration
	f    func()
	done bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker and NewTimer are not used by the engine (AfterFunc is).
func (c *fakeClock) NewTicker(time.Duration) clock.Ticker { panic("notify: the engine uses no ticker") }
func (c *fakeClock) NewTimer(time.Duration) clock.Timer   { panic("notify: the engine uses no timer") }

var _ clock.Clock = (*fakeClock)(nil)

func (c *fakeClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), d: d, f: f}
	c.timers = append(c.timers, t)
	c.waits = append(c.waits, d)
	return t
}

// C is nil: an AfterFunc timer has no channel.
func (t *fakeTimer) C() <-chan time.Time { return nil }

// Reset sets the timer to run d after now again.
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.c.remove(t)
	t.at, t.d, t.done = t.c.now.Add(d), d, false
	t.c.timers = append(t.c.timers, t)
	return was
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	t.c.remove(t)
	return true
}

func (c *fakeClock) remove(t *fakeTimer) {
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return
		}
	}
}

// Advance moves the time by d, running each timer that becomes due at its
// own time, earliest first (a timer set by a callback runs too when it
// falls due within d).
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *fakeTimer
		for _, t := range c.timers {
			if !t.at.After(target) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			c.now = target
			c.mu.Unlock()
			return
		}
		if next.at.After(c.now) {
			c.now = next.at
		}
		next.done = true
		c.remove(next)
		c.mu.Unlock()
		next.f()
	}
}

// pending is the durations of the timers not yet run or stopped.
func (c *fakeClock) pending() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Duration, len(c.timers))
	for i, t := range c.timers {
		out[i] = t.d
	}
	return out
}

func (c *fakeClock) askedWaits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// eventually polls cond for at most 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// recSender records every request and answers with err (nil: accepted).
type recSender struct {
	mu   sync.Mutex
	reqs []Request
	err  error
}

func (s *recSender) Send(_ context.Context, r Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
	return s.err
}

func (s *recSender) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func (s *recSender) all() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// view is a reachable, working, active session.
func view(id string) Session {
	return Session{SessionRow: &api.SessionRow{SessionId: id, Name: "Sable", Agent: "claude-code", Node: "buildbox", Task: "fix the tests",
		Activity: string(presence.ActivityWorking), TaskState: string(presence.TaskActive), Reachable: true}}
}

func mustHook(t *testing.T, url, on, format string) Webhook {
	t.Helper()
	w, err := NewWebhook(url, on, format)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func noJitter(d time.Duration) time.Duration { return d }

// fresh is s with a row of its own: the engine keeps the rows it is
// given, so a test that changes a session it handed over changes a copy.
func (s Session) fresh() Session {
	s.SessionRow = proto.Clone(s.SessionRow).(*api.SessionRow)
	return s
}
