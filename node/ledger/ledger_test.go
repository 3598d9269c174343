package ledger

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
)

func ev(session, id string, sec int) presence.Event {
	return presence.Event{ID: id, SessionID: session, Type: presence.TypeToolPreUse,
		TS: time.Date(2026, 8, 12, 10, 0, sec, 0, time.UTC)}
}

func TestAppendIsIdempotentByID(t *testing.T) {
	l, err := Open(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := l.Append([]presence.Event{ev("s", "a", 1), ev("s", "b", 2), ev("s", "a", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stored) != 2 || r.Duplicates != 1 {
		t.Fatalf("stored %d dups %d", len(r.Stored), r.Duplicates)
	}
	r, err = l.Append([]presence.Event{ev("s", "b", 2)})
	if err != nil || len(r.Stored) != 0 || r.Duplicates != 1 {
		t.Fatalf("second append: %+v %v", r, err)
	}
	evs, err := l.Session("s")
	if err != nil || len(evs) != 2 || evs[0].Seq != 1 || evs[1].Seq != 2 {
		t.Fatalf("session: %+v %v", evs, err)
	}
}

func TestSessionsAreContiguousAndSeqSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		s := fmt.Sprintf("s%d", i%3)
		if _, err := l.Append([]presence.Event{ev(s, fmt.Sprintf("e%d", i), i)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if err := l.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	l, err = Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := l.Append([]presence.Event{ev("s0", "late", 30)})
	if err != nil || r.Stored[0].Seq != 5 {
		t.Fatalf("seq after reopen: %+v %v", r, err)
	}
	got := map[string]int{}
	err = l.ForEachSession(func(s string, evs []presence.Event) error {
		if _, dup := got[s]; dup {
			t.Fatalf("session %s visited twice", s)
		}
		got[s] = len(evs)
		return nil
	})
	if err != nil || got["s0"] != 5 || got["s1"] != 3 || got["s2"] != 3 {
		t.Fatalf("sessions %v %v", got, err)
	}
}

func TestConcurrentDuplicateAppendsStoreOnce(t *testing.T) {
	l, err := Open(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := l.Append([]presence.Event{ev("s", fmt.Sprintf("e%d", i), i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	evs, _ := l.Session("s")
	if len(evs) != 50 {
		t.Fatalf("stored %d events, want 50", len(evs))
	}
}

func TestDiagnosticsNewestFirst(t *testing.T) {
	l, err := Open(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 3; i++ {
		if _, err := l.AddDiagnostic(Diagnostic{Error: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := l.Diagnostics(2)
	if err != nil || len(ds) != 2 || ds[0].Error != "2" {
		t.Fatalf("%+v %v", ds, err)
	}
}
