package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/harn-dev/harn/presence"
)

// diskFault fails, while on, every write-side operation whose path
// matches (all of them when match is nil) with ENOSPC, as a full disk
// does.
type diskFault struct {
	on    atomic.Bool
	match func(path string) bool
	hits  atomic.Int64
}

func (f *diskFault) MaybeError(op errorfs.Op) error {
	if !f.on.Load() || op.Kind.ReadOrWrite() != errorfs.OpIsWrite ||
		op.Kind == errorfs.OpLock || op.Kind == errorfs.OpFileClose || op.Kind == errorfs.OpRemove {
		return nil
	}
	if f.match != nil && !f.match(op.Path) {
		return nil
	}
	f.hits.Add(1)
	return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
}

func (f *diskFault) String() string { return "diskFault" }

func faultConfig(t *testing.T, f *diskFault) Config {
	return Config{Dir: t.TempDir(), Logger: quietLogger(), FS: errorfs.Wrap(vfs.Default, f),
		RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond, OpenTimeout: 5 * time.Second,
		MinFreeBytes: -1}
}

// waitWritable polls (bounded) until the ledger takes writes again.
func waitWritable(t *testing.T, l *Ledger) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for l.Writable() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("ledger still unwritable after 10s: %v", l.Writable())
		}
		l.Retry()
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFailedCommitReturnsNoSpaceAndNeverPanics: a commit whose WAL write
// fails returns an error matching ErrNoSpace, ErrUnwritable and ENOSPC,
// and the process goes on.
func TestFailedCommitReturnsNoSpaceAndNeverPanics(t *testing.T) {
	f := &diskFault{}
	l, err := Open(faultConfig(t, f))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append([]presence.Event{ev("s", "ok1", 1)}); err != nil {
		t.Fatal(err)
	}
	f.on.Store(true)
	_, err = l.Append([]presence.Event{ev("s", "lost", 2)})
	var ue *UnwritableError
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, ErrUnwritable) || !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &ue) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "ledger: disk full") {
		t.Fatalf("message %q", err)
	}
	if !errors.Is(l.Writable(), ErrNoSpace) {
		t.Fatalf("Writable: %v", l.Writable())
	}
	// Later writes are refused at once, not retried into Pebble.
	if _, err := l.Append([]presence.Event{ev("s", "lost2", 3)}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("second append: %v", err)
	}
	if _, err := l.AddDiagnostic(Diagnostic{Error: "kept"}); !errors.Is(err, ErrUnwritable) {
		t.Fatalf("diagnostic: %v", err)
	}
}

// TestReadsWorkWhileUnwritable: acknowledged events stay readable while
// the disk refuses writes.
func TestReadsWorkWhileUnwritable(t *testing.T) {
	f := &diskFault{}
	l, err := Open(faultConfig(t, f))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 5 {
		if _, err := l.Append([]presence.Event{ev("s", fmt.Sprint("e", i), i)}); err != nil {
			t.Fatal(err)
		}
	}
	f.on.Store(true)
	if _, err := l.Append([]presence.Event{ev("s", "lost", 9)}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("append: %v", err)
	}
	readBack := func(when string) {
		t.Helper()
		evs, err := l.Session("s")
		if err != nil {
			t.Fatalf("read while unwritable, %s: %v", when, err)
		}
		for i := range 5 {
			if i >= len(evs) || evs[i].ID != fmt.Sprint("e", i) {
				t.Fatalf("acked events %s: %+v", when, evs)
			}
		}
		if ok, err := l.HasEvent("e4"); !ok || err != nil {
			t.Fatalf("HasEvent %s: %v %v", when, ok, err)
		}
	}
	readBack("before the read-only reopen")
	waitReadOnly(t, l)
	readBack("after the read-only reopen")
}

// waitReadOnly polls (bounded) until the recovery has reopened the store
// read-only.
func waitReadOnly(t *testing.T, l *Ledger) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.swap.RLock()
		ro := l.db != nil && l.ro
		l.swap.RUnlock()
		if ro {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the store was not reopened read-only within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWritesResumeAfterFaultClears: once the disk takes writes again the
// ledger reopens read-write by itself, calls OnRecover, writes the meta
// values and diagnostics it kept, and records what it refused.
func TestWritesResumeAfterFaultClears(t *testing.T) {
	f := &diskFault{}
	cfg := faultConfig(t, f)
	recovered := make(chan struct{}, 1)
	cfg.OnRecover = func() { recovered <- struct{}{} }
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]presence.Event{ev("s", "a", 1)}); err != nil {
		t.Fatal(err)
	}
	f.on.Store(true)
	if _, err := l.Append([]presence.Event{ev("s", "b", 2)}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("append: %v", err)
	}
	if err := l.PutMeta("ctx/s", []byte("v1")); !errors.Is(err, ErrUnwritable) {
		t.Fatalf("PutMeta: %v", err)
	}
	if v, _ := l.GetMeta("ctx/s"); string(v) != "v1" {
		t.Fatalf("GetMeta while unwritable: %q", v)
	}
	if _, err := l.AddDiagnostic(Diagnostic{Source: "hook", Error: "kept"}); !errors.Is(err, ErrUnwritable) {
		t.Fatalf("AddDiagnostic: %v", err)
	}
	f.on.Store(false)
	waitWritable(t, l)
	select {
	case <-recovered:
	case <-time.After(10 * time.Second):
		t.Fatal("OnRecover not called")
	}
	if _, err := l.Append([]presence.Event{ev("s", "b", 2), ev("s", "c", 3)}); err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
	l.Close()

	cfg.OnRecover = nil
	l, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	evs, err := l.Session("s")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, e := range evs {
		ids = append(ids, e.ID)
		if e.Seq != uint64(i+1) {
			t.Fatalf("seqs not contiguous: %+v", evs)
		}
	}
	if strings.Join(ids, ",") != "a,b,c" {
		t.Fatalf("events %v", ids)
	}
	if v, _ := l.GetMeta("ctx/s"); string(v) != "v1" {
		t.Fatalf("meta after recovery: %q", v)
	}
	ds, _ := l.Diagnostics(0)
	var kept, refused bool
	for _, d := range ds {
		kept = kept || d.Error == "kept"
		refused = refused || (d.Source == "ledger" && strings.Contains(d.Error, "refused 1 appends (1 events)"))
	}
	if !kept || !refused {
		t.Fatalf("diagnostics %+v", ds)
	}
}

// TestAckedAppendsSurviveDiskFaults: writers append while the disk fails
// and recovers; every append that returned nil is in the ledger after a
// reopen, and none that failed was acknowledged.
func TestAckedAppendsSurviveDiskFaults(t *testing.T) {
	f := &diskFault{}
	cfg := faultConfig(t, f)
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				_, err := l.Append([]presence.Event{ev(fmt.Sprint("s", w), id, i%60)})
				switch {
				case err == nil:
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				case errors.Is(err, ErrUnwritable), errors.Is(err, ErrInFlight):
					time.Sleep(time.Millisecond)
				default:
					t.Errorf("append %s: %v", id, err)
					return
				}
			}
		}()
	}
	// ackedMore waits (bounded) until the writers have had n more writes
	// acknowledged.
	ackedMore := func(n int) {
		t.Helper()
		mu.Lock()
		want := len(acked) + n
		mu.Unlock()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			got := len(acked)
			mu.Unlock()
			if got >= want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d writes acknowledged, want %d within 10s", got, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for range 3 {
		ackedMore(20)
		f.on.Store(true)
		deadline := time.Now().Add(5 * time.Second)
		for l.Writable() == nil && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if l.Writable() == nil {
			t.Fatal("the fault never surfaced")
		}
		f.on.Store(false)
		waitWritable(t, l)
	}
	ackedMore(20)
	close(stop)
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged")
	}
	for id := range acked {
		if ok, err := l.HasEvent(id); !ok || err != nil {
			t.Fatalf("acknowledged %s lost (%v)", id, err)
		}
	}
}

// TestOpenEndsWithinBoundWhenFlushFails: a WAL to replay and a disk that
// refuses the flush made pebble.Open retry forever; Open now returns
// ErrOpenTimeout within OpenTimeout, the abandoned attempt releases the
// directory, and an Open after the fault clears finds every event.
func TestOpenEndsWithinBoundWhenFlushFails(t *testing.T) {
	f := &diskFault{match: func(p string) bool { return strings.HasSuffix(p, ".sst") }}
	cfg := faultConfig(t, f)
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := l.Append([]presence.Event{ev("s", fmt.Sprint("e", i), i)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	f.on.Store(true)
	cfg.OpenTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err = Open(cfg)
	if !errors.Is(err, ErrOpenTimeout) {
		t.Fatalf("open with a failing flush: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("open took %s", d)
	}
	if f.hits.Load() == 0 {
		t.Fatal("the flush never hit the fault")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg.OpenTimeout = time.Minute
	hits := f.hits.Load()
	go func() { // cancel once this open has met the failing flush
		deadline := time.Now().Add(10 * time.Second)
		for f.hits.Load() == hits && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := OpenContext(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("open stopped by its context: %v", err)
	}
	f.on.Store(false)
	cfg.OpenTimeout = 5 * time.Second
	l, err = Open(cfg)
	if err != nil {
		t.Fatalf("open after the fault: %v", err)
	}
	defer l.Close()
	if evs, _ := l.Session("s"); len(evs) != 20 {
		t.Fatalf("%d events after reopen", len(evs))
	}
}

// TestOpenOnFullDiskFailsFast: the probe refuses a full disk before
// Pebble is opened.
func TestOpenOnFullDiskFailsFast(t *testing.T) {
	f := &diskFault{}
	f.on.Store(true)
	_, err := Open(faultConfig(t, f))
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("open on a full disk: %v", err)
	}
}
