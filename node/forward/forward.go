// Package forward is the node's one path to the registry's leader: it
// makes an operation here, and when this node does not lead, makes it on
// the leader instead, retrying while leadership moves. The local attempt
// says "look elsewhere" with an *ElsewhereError; every other error ends
// the attempt as it is.
package forward

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// Errors of Do.
var (
	// ErrNoLeader: no leader took the operation within the context or the
	// attempts.
	ErrNoLeader = errors.New("forward: no leader took the operation")
	// ErrStopped: Stop closed while Do waited.
	ErrStopped = errors.New("forward: stopped")
)

// ElsewhereError says that the operation must be made on another node:
// the leader, when Leader names it, or the one to come, when no leader is
// known (Do waits and tries again).
type ElsewhereError struct {
	Leader string
	Err    error
}

func (e *ElsewhereError) Error() string {
	if e.Leader == "" {
		return fmt.Sprintf("no leader known: %v", e.Err)
	}
	return fmt.Sprintf("leader is %s: %v", e.Leader, e.Err)
}

// Unwrap returns the local attempt's error.
func (e *ElsewhereError) Unwrap() error { return e.Err }

// Path configures Do.
type Path struct {
	// Timeout bounds one forward to the leader: a leader cut off by a
	// partition must not eat the caller's whole budget while the majority
	// already elected another.
	Timeout time.Duration
	// Retry is the wait between attempts.
	Retry time.Duration
	// Attempts bounds the attempts (0: 50).
	Attempts int
	Clock    clock.Clock
	// Stop, when it closes, ends Do with ErrStopped (nil: never).
	Stop <-chan struct{}
	// NoLeader and Stopped, when set, replace ErrNoLeader and ErrStopped
	// in what Do returns.
	NoLeader, Stopped error
}

// Do runs local; while it returns an *ElsewhereError, it runs remote on
// the leader that error names (with Timeout), else waits Retry and tries
// again, until ctx ends. It returns nil on the first success.
func (p Path) Do(ctx context.Context, local func() error, remote func(ctx context.Context, leader string) error) error {
	noLeader, stopped := p.NoLeader, p.Stopped
	if noLeader == nil {
		noLeader = ErrNoLeader
	}
	if stopped == nil {
		stopped = ErrStopped
	}
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = 50
	}
	clk := p.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	var last error
	for attempt := 0; attempt < attempts; attempt++ {
		err := local()
		if err == nil {
			return nil
		}
		var le *ElsewhereError
		if !errors.As(err, &le) {
			return err
		}
		last = err
		if le.Leader != "" {
			fctx, cancel := context.WithTimeout(ctx, p.Timeout)
			ferr := remote(fctx, le.Leader)
			cancel()
			if ferr == nil {
				return nil
			}
			last = ferr
		}
		t := clk.NewTimer(p.Retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", noLeader, last)
		case <-p.Stop:
			t.Stop()
			return stopped
		case <-t.C():
		}
	}
	return fmt.Errorf("%w: %w", noLeader, last)
}
