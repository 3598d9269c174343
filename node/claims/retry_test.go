package claims

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

var errNoLeader = errors.New("raftstore: no leader")

// flakyTable is a local table whose writes fail while down (the registry
// has no leader).
type flakyTable struct {
	*Local
	down     atomic.Bool
	attempts atomic.Int32
}

func (f *flakyTable) Write(ctx context.Context, cmd raftstore.Command) error {
	f.attempts.Add(1)
	if f.down.Load() {
		return errNoLeader
	}
	return f.Local.Write(ctx, cmd)
}

// rowLog records what the rows were told.
type rowLog struct {
	mu     sync.Mutex
	events []string
	landed chan struct{}
}

func (r *rowLog) add(kind, session string, abs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range abs {
		r.events = append(r.events, kind+" "+session+" "+a)
	}
}
func (r *rowLog) ClaimPending(s string, abs []string) { r.add("pending", s, abs) }
func (r *rowLog) ClaimLanded(s string, abs []string) {
	r.add("landed", s, abs)
	select {
	case r.landed <- struct{}{}:
	default:
	}
}
func (r *rowLog) ClaimDropped(s string, abs []string) { r.add("dropped", s, abs) }
func (r *rowLog) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func newRetryDecider(t *testing.T) (*Decider, *flakyTable, *clock.Fake, *rowLog) {
	t.Helper()
	ft := &flakyTable{Local: NewLocal()}
	fc := clock.NewFake(time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC))
	rows := &rowLog{landed: make(chan struct{}, 1)}
	d := New(Config{Mode: ModeEnforce, Node: "n1", Table: ft, Writer: ft, Describe: fakeDescribe{},
		Clock: fc, Rows: rows})
	t.Cleanup(d.Close)
	return d, ft, fc, rows
}

var req = func(s string) Request {
	return Request{Session: s, Repo: "R", Paths: []string{"pkg/x.go"}, Abs: []string{"/src/r/pkg/x.go"}}
}

func TestAClaimNotRecordedIsRetriedWithBackoffUntilItLands(t *testing.T) {
	d, ft, fc, rows := newRetryDecider(t)
	ft.down.Store(true)
	v := d.Decide(context.Background(), req("a"))
	if v.Decision != DecideAllow || v.Diagnostic == "" {
		t.Fatalf("a write whose claim is not recorded is allowed with a diagnostic: %+v", v)
	}
	if got := rows.log(); len(got) != 1 || got[0] != "pending a /src/r/pkg/x.go" {
		t.Fatalf("the row is told the claim is pending: %v", got)
	}
	if p := d.Pending("a"); len(p) != 1 || p[0].Paths[0] != "pkg/x.go" {
		t.Fatalf("pending: %+v", p)
	}
	// First retry after retryMin; it fails, the next one waits twice as long.
	if !fc.BlockUntil(1, 5*time.Second) {
		t.Fatal("the retry armed no timer")
	}
	due, _ := fc.NextDue()
	if want := fc.Now().Add(retryMin); !due.Equal(want) {
		t.Fatalf("first retry due %v, want %v", due, want)
	}
	before := ft.attempts.Load()
	fc.Advance(retryMin)
	if !waitFor(func() bool { return ft.attempts.Load() > before && fc.Waiters() == 1 }) {
		t.Fatal("the retry did not run and re-arm")
	}
	due, _ = fc.NextDue()
	if want := fc.Now().Add(2 * retryMin); !due.Equal(want) {
		t.Fatalf("second retry due %v, want %v (backoff doubles)", due, want)
	}
	n := ft.attempts.Load()
	fc.Advance(2*retryMin - time.Millisecond)
	if ft.attempts.Load() != n || fc.Waiters() != 1 {
		t.Fatal("a retry ran before its backoff passed")
	}
	if _, ok := ft.ClaimOf("R", "pkg/x.go"); ok {
		t.Fatal("recorded while the registry had no leader")
	}
	ft.down.Store(false) // a leader is back
	fc.Advance(time.Millisecond)
	select {
	case <-rows.landed:
	case <-time.After(5 * time.Second):
		t.Fatal("the claim did not land once the registry could record it")
	}
	if c, ok := ft.ClaimOf("R", "pkg/x.go"); !ok || c.SessionID != "a" {
		t.Fatalf("not recorded for a: %+v", c)
	}
	if len(d.Pending("a")) != 0 {
		t.Fatal("still pending after it landed")
	}
	if v := d.Decide(context.Background(), req("b")); v.Decision != DecideDeny {
		t.Fatalf("another session's write after the claim landed: %+v, want deny", v)
	}
}

func TestTheRetryBackoffIsBounded(t *testing.T) {
	d, ft, fc, _ := newRetryDecider(t)
	ft.down.Store(true)
	d.Decide(context.Background(), req("a"))
	for i := 0; i < 12; i++ {
		if !waitFor(func() bool { return fc.Waiters() == 1 }) {
			t.Fatal("no retry armed")
		}
		due, _ := fc.NextDue()
		if wait := due.Sub(fc.Now()); wait > retryMax {
			t.Fatalf("retry %d waits %v, more than %v", i, wait, retryMax)
		}
		n := ft.attempts.Load()
		fc.Set(due)
		if !waitFor(func() bool { return ft.attempts.Load() > n }) {
			t.Fatal("the retry did not run")
		}
	}
}

func TestAPendingClaimEndsWithItsSession(t *testing.T) {
	ft := &flakyTable{Local: NewLocal()}
	fc := clock.NewFake(time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC))
	desc := fakeDescribe{}
	d := New(Config{Node: "n1", Table: ft, Writer: ft, Describe: desc, Clock: fc})
	defer d.Close()
	ft.down.Store(true)
	d.Decide(context.Background(), req("a"))
	desc["a"] = Holder{Ended: true}
	ft.down.Store(false)
	if !fc.BlockUntil(1, 5*time.Second) {
		t.Fatal("no retry armed")
	}
	fc.Advance(retryMin)
	if !waitFor(func() bool { return len(d.Pending("a")) == 0 }) {
		t.Fatal("the claim of an ended session is still pending")
	}
	if _, ok := ft.ClaimOf("R", "pkg/x.go"); ok {
		t.Fatal("an ended session's pending claim was recorded")
	}
}

func TestADeniedWriteReleasesTheClaimItTook(t *testing.T) {
	d, ft, _, rows := newRetryDecider(t)
	d.BeginCall("a", CallRef{})
	if v := d.Decide(context.Background(), req("a")); v.Decision != DecideAllow {
		t.Fatalf("%+v", v)
	}
	if err := d.ReleaseTaken(context.Background(), "a", CallRef{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := ft.ClaimOf("R", "pkg/x.go"); ok {
		t.Fatal("the denied write's claim still holds")
	}
	if got := rows.log(); len(got) != 1 || got[0] != "dropped a /src/r/pkg/x.go" {
		t.Fatalf("the row is told the claim is gone: %v", got)
	}
	if v := d.Decide(context.Background(), req("b")); v.Decision != DecideAllow {
		t.Fatalf("another session may claim the file then: %+v", v)
	}
}

func TestADeniedWriteKeepsClaimsTakenBefore(t *testing.T) {
	d, ft, _, _ := newRetryDecider(t)
	d.BeginCall("a", CallRef{})
	d.Decide(context.Background(), req("a"))
	d.BeginCall("a", CallRef{}) // the next call writes the same file: it takes nothing new
	d.Decide(context.Background(), req("a"))
	if err := d.ReleaseTaken(context.Background(), "a", CallRef{}); err != nil {
		t.Fatal(err)
	}
	if c, ok := ft.ClaimOf("R", "pkg/x.go"); !ok || c.SessionID != "a" {
		t.Fatal("a denied write released a claim an earlier write took")
	}
}

// waitFor polls cond for up to 5 s (real time): it waits for something
// that must happen, never proves an absence.
func waitFor(cond func() bool) bool {
	for i := 0; i < 500; i++ {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
