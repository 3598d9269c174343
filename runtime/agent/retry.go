package agent

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// Retry is the bounded retry policy of model calls: 429 and 5xx answers
// are retried up to Attempts times in all, with exponential backoff from
// Base to Max and full jitter; a Retry-After the provider sends wins (up
// to Max).
type Retry struct {
	Attempts int
	Base     time.Duration
	Max      time.Duration
	Clock    clock.Clock
}

// DefaultRetry is the policy of a provider built without one.
var DefaultRetry = Retry{Attempts: 4, Base: 500 * time.Millisecond, Max: 20 * time.Second}

func (r Retry) norm() Retry {
	if r.Attempts <= 0 {
		r.Attempts = DefaultRetry.Attempts
	}
	if r.Base <= 0 {
		r.Base = DefaultRetry.Base
	}
	if r.Max <= 0 {
		r.Max = DefaultRetry.Max
	}
	if r.Clock == nil {
		r.Clock = clock.Real{}
	}
	return r
}

// delay is the wait before retry n (from 1) after err.
func (r Retry) delay(n int, err error) time.Duration {
	var se *StatusError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		return min(se.RetryAfter, r.Max)
	}
	d := r.Base << min(n-1, 16)
	if d <= 0 || d > r.Max {
		d = r.Max
	}
	return time.Duration(rand.Int64N(int64(d)/2+1)) + d/2 // jitter in [d/2, d]
}

// do runs f until it succeeds, fails with an error that is not retryable,
// or the attempts are spent; it returns the retries made.
func (r Retry) do(ctx context.Context, f func() error) (int, error) {
	r = r.norm()
	for n := 0; ; n++ {
		err := f()
		var se *StatusError
		if err == nil || !errors.As(err, &se) || !se.Retryable() || n+1 >= r.Attempts {
			return n, err
		}
		if !sleepCtx(ctx, r.Clock, r.delay(n+1, err)) {
			return n, ctx.Err()
		}
	}
}

// sleepCtx waits d on c; false when ctx ended first.
func sleepCtx(ctx context.Context, c clock.Clock, d time.Duration) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// nowFunc is the wall clock for Retry-After dates.
var nowFunc = time.Now
