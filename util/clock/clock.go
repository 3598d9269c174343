// Package clock injects time, so that timers, tickers and TTLs are
// testable. Production code takes a Clock (Real in use); tests pass a Fake
// and move it with Advance, which fires every timer and ticker that falls
// due, in time order, before it returns (as tailscale's tstest.Clock).
package clock

import (
	"time"
)

// Clock tells the time and makes timers and tickers.
type Clock interface {
	Now() time.Time
	// NewTicker returns a ticker that ticks every d (d > 0).
	NewTicker(d time.Duration) Ticker
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine after d. The Timer's C is nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Ticker is a time.Ticker behind an interface.
type Ticker interface {
	C() <-chan time.Time
	Stop()
	Reset(d time.Duration)
}

// Timer is a time.Timer behind an interface.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped
	// it (false: it had fired or was stopped).
	Stop() bool
	// Reset arms the timer to fire after d; it reports whether it was
	// armed.
	Reset(d time.Duration) bool
}

// Sleep waits d on c, or until stop closes; it reports whether the full
// wait elapsed.
func Sleep(c Clock, d time.Duration, stop <-chan struct{}) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-stop:
		return false
	}
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTicker wraps time.NewTicker.
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Or is c, or the real clock when c is nil: for a struct whose exported
// fields are its configuration and that has no constructor to set the
// default in.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}
