package context

import (
	stdctx "context"
	"fmt"
	"testing"
)

// thresholdLane fills a lane with small completed exchanges, asking for
// the working set of budget after each, until the first compaction; it
// returns that compaction and the condenser's calls.
func thresholdLane(t *testing.T, budget int, replies ...func(CondenseInput) (string, error)) (Compaction, int) {
	t.Helper()
	var evs []Compaction
	cond := &scriptedCondenser{replies: replies}
	sp := NewSpace(openPebble(t, ""), Options{Compaction: true, Condenser: cond, PreviewBytes: 1024,
		OnCompact: func(c Compaction) { evs = append(evs, c) }})
	l, err := sp.Open("s1", "")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Append(user("t1", "do the work"))
	for i := 0; i < 400 && len(evs) == 0; i++ {
		id := fmt.Sprintf("c%d", i)
		_ = l.Append(call("t1", id, "read", `{"path":"f"}`), result("t1", id, filler(400, i)))
		if _, err := l.WorkingSet(stdctx.Background(), "t1", budget); err != nil {
			t.Fatal(err)
		}
	}
	if len(evs) == 0 {
		t.Fatal("no compaction in 400 exchanges")
	}
	cond.mu.Lock()
	defer cond.mu.Unlock()
	return evs[0], cond.calls
}

// stepTokens bounds what one exchange of thresholdLane adds.
const stepTokens = 200

// Seed 001: "At 80% of the usable input budget, admission targets 60%."
// The first compaction starts once the working set reaches 80% of the
// budget, not before and not an exchange later.
func TestCompactionStartsAt80PercentOfTheBudget(t *testing.T) {
	const budget = 10000
	ev, _ := thresholdLane(t, budget, goodSummary)
	if ev.Before < budget*80/100 || ev.Before >= budget*80/100+stepTokens {
		t.Fatalf("first compaction at %d of %d tokens; want at 80%% (%d..%d)", ev.Before, budget, budget*80/100, budget*80/100+stepTokens)
	}
}

// Seed 001: admission targets 60% of the usable input budget. The
// deterministic fallback (the condenser unavailable) lands at 60%, within
// the cost of the reference lines it leaves.
func TestCompactionTargets60PercentOfTheBudget(t *testing.T) {
	const budget = 10000
	ev, _ := thresholdLane(t, budget, unavailable)
	if ev.Method != MethodFallback {
		t.Fatalf("method %s, want the fallback", ev.Method)
	}
	lo, hi := budget*50/100, budget*60/100+stepTokens // reference lines cost less than planned: a little under
	if ev.After < lo || ev.After > hi {
		t.Fatalf("after compaction %d of %d tokens; want the 60%% target (%d..%d)", ev.After, budget, lo, hi)
	}
}

// Seed 001: "When LLM compaction is enabled, Harnez starts one bounded
// condensation operation and can retry invalid output once."
func TestInvalidCondensationIsRetriedExactlyOnce(t *testing.T) {
	ev, calls := thresholdLane(t, 10000, badSummary)
	if calls != 2 || ev.Method != MethodFallback {
		t.Fatalf("condenser called %d times, method %s; want 2 calls (one retry) then the fallback", calls, ev.Method)
	}
}

// The context line (`harn context`) names the two lines: admission at 80%
// and the target at 60% of the usable budget.
func TestReportNamesThe80And60PercentLines(t *testing.T) {
	sp := NewSpace(openPebble(t, ""), Options{})
	l, _ := sp.Open("s1", "")
	_ = l.Append(user("t1", "go"))
	if _, err := l.WorkingSet(stdctx.Background(), "t1", 1000); err != nil {
		t.Fatal(err)
	}
	r := l.Report()
	if r.Budget.Admission != 800 || r.Budget.Target != 600 {
		t.Fatalf("report budget %+v; want admission 800 and target 600 of 1000", r.Budget)
	}
}
