package trust

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/peer"
)

// Failed join attempts are rate limited. The call is open to anyone who
// reaches the rpc port, and a token's secret is 160 bits, so guessing
// cannot win; the limit keeps a guesser from costing the server CPU (each
// attempt is a CSR check) and its log. Every attempt takes one from two
// token buckets, its source address's, then the server's, and a join that
// succeeds gives it back: a fleet joining at once from one address (a
// rollout script, a NAT) is bounded by its token's uses, not by the limit,
// while a guesser, who never succeeds, empties its bucket. An empty bucket
// refuses the attempt at once, before the request is decoded, with
// ErrJoinRateLimited (gRPC ResourceExhausted).

// ErrJoinRateLimited: too many join attempts from this address, or in all.
var ErrJoinRateLimited = errors.New("trust: too many join attempts; wait and retry")

// Rate is a token bucket: Burst attempts at once, then one more every
// Every.
type Rate struct {
	Burst int
	Every time.Duration
}

// JoinLimits are the join call's rate limits. A zero Rate takes its
// default; a negative Burst turns that limit off.
type JoinLimits struct {
	// PerSource is each source address's bucket (default 10, then one
	// every 6 s: 10 a minute).
	PerSource Rate
	// Global is the server's bucket, over every source (default 60, then
	// two a second).
	Global Rate
	// MaxSources bounds the addresses tracked (default 10,000). Full
	// buckets are forgotten first; past it, a new address is refused.
	MaxSources int
}

// Defaults of JoinLimits.
var (
	DefaultJoinPerSource  = Rate{Burst: 10, Every: 6 * time.Second}
	DefaultJoinGlobal     = Rate{Burst: 60, Every: 500 * time.Millisecond}
	DefaultJoinMaxSources = 10_000
)

func (l JoinLimits) withDefaults() JoinLimits {
	if l.PerSource == (Rate{}) {
		l.PerSource = DefaultJoinPerSource
	}
	if l.Global == (Rate{}) {
		l.Global = DefaultJoinGlobal
	}
	if l.MaxSources <= 0 {
		l.MaxSources = DefaultJoinMaxSources
	}
	return l
}

// bucket is a token bucket's state: tokens at time at, and the attempts
// that took one and have not ended yet.
type bucket struct {
	tokens   float64
	at       time.Time
	inflight int
}

// refill brings b to now under r and reports whether it is full.
func (b *bucket) refill(r Rate, now time.Time) bool {
	if r.Every > 0 && now.After(b.at) {
		b.tokens += float64(now.Sub(b.at)) / float64(r.Every)
	}
	if b.tokens > float64(r.Burst) {
		b.tokens = float64(r.Burst)
	}
	b.at = now
	return b.tokens >= float64(r.Burst) && b.inflight == 0
}

// joinLimiter applies JoinLimits. Safe for concurrent use.
type joinLimiter struct {
	lim     JoinLimits
	mu      sync.Mutex
	global  bucket
	sources map[string]*bucket
	// ended is closed and replaced when an attempt ends: an attempt that
	// found its bucket empty while others of it were under way waits for
	// them (they may give their token back) instead of being refused.
	ended   chan struct{}
	waiting int // attempts waiting on ended (tests)
}

func newJoinLimiter(l JoinLimits, now time.Time) *joinLimiter {
	l = l.withDefaults()
	return &joinLimiter{lim: l, global: bucket{tokens: float64(l.Global.Burst), at: now}, sources: map[string]*bucket{},
		ended: make(chan struct{})}
}

// allow takes one attempt from source's bucket and the global one, or
// refuses (taking nothing from the global bucket when the source's is
// empty, so one address cannot spend the others' share). When a bucket is
// empty only because attempts are under way, it waits (within ctx) for
// one of them to end. The returned settle ends the attempt: a successful
// join gives its token back, a failed one keeps it spent.
func (j *joinLimiter) allow(ctx context.Context, source string, now func() time.Time) (settle func(joined bool), err error) {
	for {
		wait, err := j.take(source, now())
		if err != nil {
			return nil, err
		}
		if wait == nil {
			return func(joined bool) { j.settle(source, joined) }, nil
		}
		j.mu.Lock()
		j.waiting++
		j.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
		}
		j.mu.Lock()
		j.waiting--
		j.mu.Unlock()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrJoinRateLimited, ctx.Err())
		}
	}
}

// take takes one attempt, or returns a channel to wait on (attempts are
// under way), or refuses.
func (j *joinLimiter) take(source string, now time.Time) (<-chan struct{}, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var b *bucket
	if per := j.lim.PerSource; per.Burst >= 0 {
		b = j.sources[source]
		if b == nil {
			if len(j.sources) >= j.lim.MaxSources {
				j.forgetFull(now)
			}
			if len(j.sources) >= j.lim.MaxSources {
				return nil, fmt.Errorf("%w: the server tracks %d addresses already", ErrJoinRateLimited, j.lim.MaxSources)
			}
			b = &bucket{tokens: float64(per.Burst), at: now}
			j.sources[source] = b
		}
		if b.refill(per, now); b.tokens < 1 {
			if b.inflight > 0 {
				return j.ended, nil
			}
			return nil, fmt.Errorf("%w: more than %d failed from %s within %v", ErrJoinRateLimited, per.Burst,
				source, time.Duration(per.Burst)*per.Every)
		}
	}
	if g := j.lim.Global; g.Burst >= 0 {
		if j.global.refill(g, now); j.global.tokens < 1 {
			if j.global.inflight > 0 {
				return j.ended, nil
			}
			return nil, fmt.Errorf("%w: the server takes at most %d failed at once", ErrJoinRateLimited, g.Burst)
		}
		j.global.tokens--
		j.global.inflight++
	}
	if b != nil {
		b.tokens--
		b.inflight++
	}
	return nil, nil
}

// settle ends an attempt of source; a join gives its token back.
func (j *joinLimiter) settle(source string, joined bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if g := j.lim.Global; g.Burst >= 0 {
		j.global.inflight--
		if joined {
			j.global.tokens = min(j.global.tokens+1, float64(g.Burst))
		}
	}
	if per := j.lim.PerSource; per.Burst >= 0 {
		if b := j.sources[source]; b != nil {
			b.inflight--
			if joined {
				b.tokens = min(b.tokens+1, float64(per.Burst))
			}
		}
	}
	close(j.ended)
	j.ended = make(chan struct{})
}

// forgetFull drops the sources whose bucket has refilled: they are as new.
func (j *joinLimiter) forgetFull(now time.Time) {
	for k, b := range j.sources {
		if b.refill(j.lim.PerSource, now) {
			delete(j.sources, k)
		}
	}
}

// sourceOf is the caller's address without its port ("" when unknown).
func sourceOf(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return ""
	}
	if host, _, err := net.SplitHostPort(p.Addr.String()); err == nil {
		return host
	}
	return p.Addr.String()
}
