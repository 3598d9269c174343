package ledger

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

func closeLedger(t *testing.T, clk clock.Clock) *Ledger {
	t.Helper()
	l, err := Open(Config{InMemory: true, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestCloseWaitsOnTheWriteInProgress: Close waits on the ledger's
// condition, not on a poll, for a write in progress, and closes the store
// as soon as it ends, while the fake clock stands still.
func TestCloseWaitsOnTheWriteInProgress(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	l := closeLedger(t, clk)
	if _, err := l.beginWrite(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	if !clk.BlockUntil(1, 10*time.Second) { // Close armed its bound: it waits
		t.Fatal("Close armed no timer")
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with a write in progress", err)
	default:
	}
	l.endWrite()
	if err := <-closed; err != nil {
		t.Fatalf("Close after the write ended: %v", err)
	}
}

// TestCloseGivesUpOnAStuckWriteAfterItsBound: a write that never ends
// holds Close until closeWait passes on the ledger's clock; Close then
// says the store stays open.
func TestCloseGivesUpOnAStuckWriteAfterItsBound(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	l := closeLedger(t, clk)
	if _, err := l.beginWrite(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	if !clk.BlockUntil(1, 10*time.Second) {
		t.Fatal("Close armed no timer")
	}
	clk.Advance(closeWait)
	if err := <-closed; !errors.Is(err, ErrClosed) {
		t.Fatalf("Close with a stuck write: %v, want ErrClosed", err)
	}
	l.endWrite()
}
