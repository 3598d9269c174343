package agent_test

import (
	"sync"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

// clockAdapter runs util/clock's interface on the runtime's FakeClock, so
// that the loop's grace timer and the runtime's barrier share one fake
// time.
type clockAdapter struct{ c *runtime.FakeClock }

func (a clockAdapter) Now() time.Time { return a.c.Now() }
func (a clockAdapter) AfterFunc(d time.Duration, f func()) clock.Timer {
	return &adTimer{t: a.c.AfterFunc(d, f)}
}
func (a clockAdapter) NewTimer(d time.Duration) clock.Timer {
	t := &adTimer{ch: make(chan time.Time, 1)}
	t.t = a.c.AfterFunc(d, func() { t.ch <- a.c.Now() })
	return t
}
func (a clockAdapter) NewTicker(d time.Duration) clock.Ticker { panic("not used") }

type adTimer struct {
	mu sync.Mutex
	t  runtime.Timer
	ch chan time.Time
}

func (t *adTimer) C() <-chan time.Time      { return t.ch }
func (t *adTimer) Stop() bool               { return t.t.Stop() }
func (t *adTimer) Reset(time.Duration) bool { panic("not used") }
