package forward

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

var errBoom = errors.New("boom")

func path() Path { return Path{Timeout: time.Second, Retry: time.Millisecond} }

func TestLocalSuccessNeverForwards(t *testing.T) {
	err := path().Do(context.Background(), func() error { return nil },
		func(context.Context, string) error { t.Fatal("forwarded"); return nil })
	if err != nil {
		t.Fatal(err)
	}
}

func TestOtherErrorsEndTheAttempt(t *testing.T) {
	calls := 0
	err := path().Do(context.Background(), func() error { calls++; return errBoom },
		func(context.Context, string) error { t.Fatal("forwarded"); return nil })
	if !errors.Is(err, errBoom) || calls != 1 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}

func TestElsewhereForwardsToTheNamedLeader(t *testing.T) {
	var to string
	err := path().Do(context.Background(),
		func() error { return &ElsewhereError{Leader: "n2", Err: errBoom} },
		func(_ context.Context, leader string) error { to = leader; return nil })
	if err != nil || to != "n2" {
		t.Fatalf("err %v, forwarded to %q", err, to)
	}
}

func TestNoLeaderRetriesUntilOneIsKnown(t *testing.T) {
	calls := 0
	err := path().Do(context.Background(), func() error {
		calls++
		if calls < 3 {
			return &ElsewhereError{Err: errBoom}
		}
		return nil
	}, func(context.Context, string) error { t.Fatal("forwarded without a leader"); return nil })
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}

func TestGivingUpWrapsTheNoLeaderSentinelAndTheLastCause(t *testing.T) {
	mine := errors.New("node: no leader")
	p := path()
	p.Attempts, p.NoLeader = 3, mine
	err := p.Do(context.Background(), func() error { return &ElsewhereError{Leader: "n2", Err: errBoom} },
		func(context.Context, string) error { return errBoom })
	if !errors.Is(err, mine) || !errors.Is(err, errBoom) {
		t.Fatalf("err %v", err)
	}
}

func TestStopEndsTheWait(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	stop := make(chan struct{})
	p := Path{Timeout: time.Second, Retry: time.Hour, Clock: clk, Stop: stop}
	done := make(chan error, 1)
	go func() {
		done <- p.Do(context.Background(), func() error { return &ElsewhereError{Err: errBoom} }, nil)
	}()
	clk.BlockUntil(1, 5*time.Second)
	close(stop)
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Fatalf("err %v", err)
	}
}
