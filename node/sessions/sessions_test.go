package sessions

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

var t0 = time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)

func openStore(t *testing.T) (*Store, *ledger.Ledger) {
	t.Helper()
	l, err := ledger.Open(ledger.DefaultConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := New(Config{Node: "n1", Ledger: l, Clock: clock.NewFake(t0)})
	if err := s.Rebuild(); err != nil {
		t.Fatal(err)
	}
	return s, l
}

func ev(session, id, typ string, sec int) presence.Event {
	return presence.Event{ID: id, SessionID: session, Type: typ, TS: t0.Add(time.Duration(sec) * time.Second), Agent: "claude-code"}
}

// TestSubscribersToldOutsideTheLock: a subscriber may read the Store and
// ingest again from inside its call, and is told each write once, in the
// order of subscription.
func TestSubscribersToldOutsideTheLock(t *testing.T) {
	s, _ := openStore(t)
	var order []string
	var got []Batch
	s.Subscribe(func(b Batch) {
		order = append(order, "first")
		got = append(got, b)
		for _, c := range b.Changed {
			if st, ok := s.State(c.State.SessionID); !ok || st.Name == "" { // reads: the lock is free
				t.Errorf("state of %s in its own notification: %+v %v", c.State.SessionID, st, ok)
			}
		}
		if len(b.Stored) > 0 && b.Stored[0].SessionID == "a" && len(got) == 1 {
			if _, err := s.Ingest(context.Background(), []presence.Event{ev("b", "2", presence.TypeSessionStart, 2)}); err != nil {
				t.Error(err)
			}
		}
	})
	s.Subscribe(func(Batch) { order = append(order, "second") })
	if _, err := s.Ingest(context.Background(), []presence.Event{ev("a", "1", presence.TypeSessionStart, 1)}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Changed[0].State.SessionID != "a" || got[1].Changed[0].State.SessionID != "b" {
		t.Fatalf("batches %+v", got)
	}
	want := []string{"first", "first", "second", "second"}
	if len(order) != len(want) {
		t.Fatalf("order %v", order)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	if got[0].Changed[0].Gen != 1 || got[0].Changed[0].Hash == "" {
		t.Fatalf("change %+v", got[0].Changed[0])
	}
}

// TestNameReservationsLiveApartFromStates: a name given to a session whose
// first events are not stored is no state: it is not resolvable, listed or
// counted, and it is freed when the append fails.
func TestNameReservationsLiveApartFromStates(t *testing.T) {
	s, l := openStore(t)
	evs := []presence.Event{ev("a", "1", presence.TypeSessionStart, 1)}
	named := s.nameNewSessions(evs)
	if len(named) != 1 || evs[0].AttrString(presence.AttrSessionName) == "" {
		t.Fatalf("named %v, attrs %v", named, evs[0].Attrs)
	}
	if _, err := s.Resolve("a"); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("a reservation resolves: %v", err)
	}
	if _, ok := s.State("a"); ok || s.Len() != 0 || len(s.Sessions(true)) != 0 || len(s.Live()) != 0 {
		t.Fatal("a reservation is a state")
	}
	// A second write for the same session while the first is on its way
	// is not named again.
	again := []presence.Event{ev("a", "2", presence.TypeUserPromptSubmit, 2)}
	if n := s.nameNewSessions(again); len(n) != 0 || again[0].AttrString(presence.AttrSessionName) != "" {
		t.Fatalf("named twice: %v", n)
	}
	s.unreserve(named) // the append failed
	if len(s.reserved) != 0 || len(s.liveNames) != 0 {
		t.Fatalf("reservation kept: %v %v", s.reserved, s.liveNames)
	}
	l.Close()
	if _, err := s.Ingest(context.Background(), []presence.Event{ev("b", "3", presence.TypeSessionStart, 3)}); err == nil {
		t.Fatal("ingest into a closed ledger")
	}
	if len(s.reserved) != 0 || len(s.liveNames) != 0 {
		t.Fatalf("a failed ingest kept its names: %v %v", s.reserved, s.liveNames)
	}
}

// TestNamesUniqueAmongConcurrentWrites: sessions started at once get
// distinct names, and each keeps the one stamped on its first event.
func TestNamesUniqueAmongConcurrentWrites(t *testing.T) {
	s, _ := openStore(t)
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a'+i%26)) + string(rune('a'+i/26))
			if _, err := s.Ingest(context.Background(), []presence.Event{ev(id, "", presence.TypeSessionStart, i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, st := range s.Sessions(false) {
		if st.Name == "" || seen[st.Name] {
			t.Fatalf("name %q of %s: empty or taken", st.Name, st.SessionID)
		}
		seen[st.Name] = true
	}
	if len(seen) != n || len(s.reserved) != 0 {
		t.Fatalf("%d names, %d reservations left", len(seen), len(s.reserved))
	}
}

// TestOlderEventLaterRefolds: an event that sorts before the last folded
// one makes the Store fold the session again from the ledger.
func TestOlderEventLaterRefolds(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	if _, err := s.Ingest(ctx, []presence.Event{ev("a", "1", presence.TypeSessionStart, 1), ev("a", "3", presence.TypeTurnStop, 3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(ctx, []presence.Event{ev("a", "2", presence.TypeUserPromptSubmit, 2)}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.State("a")
	if st.Activity != presence.ActivityIdle {
		t.Fatalf("an older prompt arriving later rolled the state back: %s", st.Activity)
	}
}
