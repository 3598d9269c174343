package remint

import (
	"sync"
	"testing"

	"github.com/harn-dev/harn/presence"
)

// blockingShower is a transcript reader that waits for release.
type blockingShower struct {
	started chan string
	release chan struct{}
}

func (b *blockingShower) Shows(path, name string) (bool, error) {
	b.started <- path
	<-b.release
	return true, nil
}

type recorder struct {
	mu  sync.Mutex
	evs []presence.Event
}

func (r *recorder) record(evs []presence.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, evs...)
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.evs)
}

func pending(id string) (presence.State, bool) {
	return presence.State{SessionID: id, SuggestedSessionName: "Agent Flint - t", Name: "Flint"}, true
}

func withPath(session, path string) []presence.Event {
	return []presence.Event{{SessionID: session, Type: presence.TypeTurnStop, Attrs: map[string]any{presence.AttrTranscriptPath: path}}}
}

// TestWatcherObserveDoesNotRead: Observe returns at once while the read
// waits; Settle waits for the read in flight; Close waits for the
// goroutine.
func TestWatcherObserveDoesNotRead(t *testing.T) {
	sh := &blockingShower{started: make(chan string, 1), release: make(chan struct{})}
	rec := &recorder{}
	w := NewWatcher(WatcherConfig{Reader: sh, State: pending, Record: rec.record})
	w.Start()
	w.Observe(withPath("s", "/t/1")) // must not block on the read
	if p := <-sh.started; p != "/t/1" {
		t.Fatalf("read %q", p)
	}
	done := make(chan struct{})
	go func() {
		w.Settle("s")
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("Settle returned while the read was in flight")
	default:
	}
	close(sh.release)
	<-done
	if rec.count() != 1 || rec.evs[0].Type != presence.TypeSessionNameSeen {
		t.Fatalf("recorded %+v", rec.evs)
	}
	w.Close()
	w.Close()
}

// TestWatcherSettleReadsInline: a queued transcript is read by the caller
// of Settle, before it returns.
func TestWatcherSettleReadsInline(t *testing.T) {
	sh := &blockingShower{started: make(chan string, 1), release: make(chan struct{})}
	close(sh.release)
	rec := &recorder{}
	w := NewWatcher(WatcherConfig{Reader: sh, State: pending, Record: rec.record}) // not started
	w.Observe(withPath("s", "/t/2"))
	w.Settle("s")
	if rec.count() != 1 {
		t.Fatalf("Settle did not read: %d events", rec.count())
	}
	w.Settle("s") // nothing queued: returns
	w.Close()
}
