package context

import (
	stdctx "context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/harn-dev/harn/runtime/agent"
)

// wellFormed reports whether every assistant's tool calls are followed at
// once by all their results: no message inside an exchange.
func wellFormed(ms []agent.Message) bool {
	for i := 0; i < len(ms); i++ {
		if ms[i].Role != agent.RoleAssistant || len(ms[i].Calls) == 0 {
			continue
		}
		for j := range ms[i].Calls {
			if i+1+j >= len(ms) || ms[i+1+j].Role != agent.RoleTool {
				return false
			}
		}
	}
	return true
}

// TestPinLandsAtAStepBoundaryNeverInsideAToolExchange: a pin made while
// a tool call runs (its results not in) waits; the next working set (the
// step boundary) carries it after the results, and it stays pinned.
func TestPinLandsAtAStepBoundaryNeverInsideAToolExchange(t *testing.T) {
	sp := NewSpace(openPebble(t, ""), Options{PreviewBytes: 1024})
	l, _ := sp.Open("s1", "")
	_ = l.Append(user("t1", "go"), call("t1", "c1", "shell", `{"command":"make"}`))
	applied, err := l.PinAt("the build uses make, never go build", false)
	if err != nil || applied {
		t.Fatalf("a pin inside an open exchange: applied %v, %v", applied, err)
	}
	if n, _ := l.Pending(); n != 1 {
		t.Fatalf("%d pins pending", n)
	}
	_ = l.Append(result("t1", "c1", "ok"))
	ms, err := l.WorkingSet(stdctx.Background(), "t1", 100000)
	if err != nil {
		t.Fatal(err)
	}
	if !wellFormed(ms) || ms[len(ms)-1].Text != "the build uses make, never go build" {
		t.Fatalf("working set %s", mustJSON(t, ms))
	}
	if n, _ := l.Pending(); n != 0 {
		t.Fatalf("%d pins still pending", n)
	}
	// A busy turn defers even between exchanges; an idle lane pins at once.
	if applied, _ := l.PinAt("second", true); applied {
		t.Fatal("a busy turn's pin was applied at once")
	}
	l.Boundary(stdctx.Background())
	if applied, err := l.PinAt("third", false); !applied || err != nil {
		t.Fatalf("an idle pin: %v %v", applied, err)
	}
	v := mustJSON(t, l.ProviderView())
	if !strings.Contains(v, "second") || !strings.Contains(v, "third") {
		t.Fatalf("pins lost: %s", v)
	}
	if _, err := l.PinAt(strings.Repeat("x", MaxPinBytes+1), false); !errors.Is(err, ErrPinTooLarge) {
		t.Fatalf("an oversized pin: %v", err)
	}
}

// TestPinsDuringATurnKeepEveryExchangeWhole: pins made concurrently with
// a loop's steps never split an exchange (race).
func TestPinsDuringATurnKeepEveryExchangeWhole(t *testing.T) {
	sp := NewSpace(openPebble(t, ""), Options{PreviewBytes: 1024})
	l, _ := sp.Open("s1", "")
	_ = l.Append(user("t1", "go"))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 30 {
			if _, err := l.PinAt("pin "+strings.Repeat("p", i), true); err != nil && !errors.Is(err, ErrTooManyPending) {
				t.Error(err)
			}
		}
	}()
	for i := range 20 {
		id := "c" + string(rune('a'+i))
		_ = l.Append(call("t1", id, "read", `{}`))
		_ = l.Append(result("t1", id, "r"))
		if _, err := l.WorkingSet(stdctx.Background(), "t1", 100000); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	l.Boundary(stdctx.Background())
	if ms := l.ProviderView(); !wellFormed(ms) {
		t.Fatalf("an exchange was split: %s", mustJSON(t, ms))
	}
}

// TestCompactNowArchivesCompletedWork: the operator's compaction runs at
// once on an idle lane whatever the admission line, and waits for the
// boundary on a busy one.
func TestCompactNowArchivesCompletedWork(t *testing.T) {
	var evs []Compaction
	sp := NewSpace(openPebble(t, ""), Options{PreviewBytes: 1024, OnCompact: func(c Compaction) { evs = append(evs, c) }})
	l, _ := sp.Open("s1", "")
	if _, _, _, err := l.CompactAt(stdctx.Background(), false); !errors.Is(err, ErrNoBudget) {
		t.Fatalf("compaction before any model call: %v", err)
	}
	fillLane(t, l, 4, 100000) // far under the admission line
	if len(evs) != 0 {
		t.Fatalf("compacted by itself: %+v", evs)
	}
	_, ran, ok, err := l.CompactAt(stdctx.Background(), true)
	if err != nil || ran || ok {
		t.Fatalf("a busy compaction ran at once: %v %v %v", ran, ok, err)
	}
	if _, c := l.Pending(); !c {
		t.Fatal("the compaction is not pending")
	}
	if _, err := l.WorkingSet(stdctx.Background(), "t1", 100000); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Method != MethodFallback || evs[0].After >= evs[0].Before || evs[0].Archived == 0 {
		t.Fatalf("compactions %+v", evs)
	}
	if !wellFormed(l.ProviderView()) {
		t.Fatal("the compaction split an exchange")
	}
	_, ran, ok, err = l.CompactAt(stdctx.Background(), false)
	if err != nil || !ran || ok {
		t.Fatalf("a second compaction with nothing left: ran %v ok %v %v", ran, ok, err)
	}
}

// TestCompactNowNeverGrowsTheWorkingSet: on a context so small that the
// checkpoint's reference lines would cost what they archive, the
// operator's compaction stores nothing and says so.
func TestCompactNowNeverGrowsTheWorkingSet(t *testing.T) {
	var evs []Compaction
	sp := NewSpace(openPebble(t, ""), Options{PreviewBytes: 1024, OnCompact: func(c Compaction) { evs = append(evs, c) }})
	l, _ := sp.Open("s1", "")
	_ = l.Append(user("t1", "go"), call("t1", "c1", "read", `{}`), result("t1", "c1", "ok"), user("t2", "next"))
	if _, err := l.WorkingSet(stdctx.Background(), "t2", 100000); err != nil {
		t.Fatal(err)
	}
	before := viewTokens(l.ProviderView())
	_, ran, ok, err := l.CompactAt(stdctx.Background(), false)
	if err != nil || !ran || ok || len(evs) != 0 {
		t.Fatalf("a compaction that would grow the set: ran %v ok %v %v %+v", ran, ok, err, evs)
	}
	if after := viewTokens(l.ProviderView()); after != before {
		t.Fatalf("the working set went from %d to %d tokens", before, after)
	}
}
