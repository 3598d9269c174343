package context

import (
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/harn-dev/harn/runtime/agent"
)

// stepOf is one step of k tool calls and its k results.
func stepOf(task string, k int) (agent.Message, []agent.Message) {
	calls := make([]agent.ToolCall, k)
	results := make([]agent.Message, k)
	for i := range k {
		id := fmt.Sprintf("c%d", i)
		calls[i] = agent.ToolCall{ID: id, Name: "read", Args: json.RawMessage(`{"path":"f"}`)}
		results[i] = result(task, id, "ok")
	}
	return agent.Message{Role: agent.RoleAssistant, Calls: calls, Task: task}, results
}

// mallocsPerResult appends a step of k calls and returns the heap
// allocations its results' Append made, per result.
func mallocsPerResult(t *testing.T, sp *Space, k int) float64 {
	t.Helper()
	l, err := sp.Open(fmt.Sprintf("s%d", k), "")
	if err != nil {
		t.Fatal(err)
	}
	asst, results := stepOf("t1", k)
	if err := l.Append(user("t1", "go"), asst); err != nil {
		t.Fatal(err)
	}
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	if err := l.Append(results...); err != nil {
		t.Fatal(err)
	}
	goruntime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(k)
}

// TestAppendingAStepsResultsIsLinear: the results of a step with many
// tool calls are appended at a constant cost each. Each result's reference
// line used to walk back over every result before it and print every call
// of the step, so 20,000 calls took minutes after a cancel. The work is
// counted in heap allocations (not time): per result, 4,000 calls must
// cost what 200 do.
func TestAppendingAStepsResultsIsLinear(t *testing.T) {
	sp := NewSpace(openPebble(t, ""), Options{NoSync: true})
	small := mallocsPerResult(t, sp, 200)
	big := mallocsPerResult(t, sp, 4000)
	if big > 1.5*small+4 {
		t.Fatalf("allocations per appended result: %.1f at 200 calls, %.1f at 4000: the append grows with the step", small, big)
	}
	t.Logf("allocations per appended result: %.1f at 200 calls, %.1f at 4000", small, big)
}

// BenchmarkAppendIsLinear: the time of one append against the size of
// what it is appended to. step_results_N appends the N results of one
// step of N tool calls (one Append, as the loop does) and reports the
// time per result; lane_N appends one exchange to a lane that holds N
// items already. Linear growth: the figures at 1k and 10k are alike
// (docs/perf.md).
func BenchmarkAppendIsLinear(b *testing.B) {
	st := openPebble(b, "")
	sp := NewSpace(st, Options{NoSync: true})
	for _, k := range []int{1000, 10_000} {
		b.Run(fmt.Sprintf("step_results_%dk", k/1000), func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				l, err := sp.Open(fmt.Sprintf("step%d-%d", k, i), "")
				if err != nil {
					b.Fatal(err)
				}
				asst, results := stepOf("t1", k)
				_ = l.Append(user("t1", "go"), asst)
				t0 := time.Now()
				if err := l.Append(results...); err != nil {
					b.Fatal(err)
				}
				total += time.Since(t0)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*k), "ns/result")
		})
	}
	for _, n := range []int{1000, 10_000} {
		l := buildLane(b, sp, fmt.Sprintf("lane%d", n), n, 0)
		b.Run(fmt.Sprintf("lane_%dk", n/1000), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("x%d", i)
				if err := l.Append(call("t1", id, "read", `{"path":"f"}`), result("t1", id, "ok")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAToolResultOverThePreviewBoundIsSeenAsAPreview: a tool result of
// exactly PreviewBytes is in the model's context whole; one byte more and
// the model sees its head and tail around a reference (bounded), while
// recall still gives every byte.
func TestAToolResultOverThePreviewBoundIsSeenAsAPreview(t *testing.T) {
	const bound = 1000
	sp := NewSpace(openPebble(t, ""), Options{NoSync: true, PreviewBytes: bound})
	for _, n := range []int{bound, bound + 1} {
		l, err := sp.Open(fmt.Sprintf("p%d", n), "")
		if err != nil {
			t.Fatal(err)
		}
		out := filler(n, n)
		if err := l.Append(user("t1", "go"), call("t1", "c1", "read", `{}`), result("t1", "c1", out)); err != nil {
			t.Fatal(err)
		}
		seen := l.ProviderView()[2].Text
		switch {
		case n == bound && seen != out:
			t.Fatalf("a result of %d bytes at a bound of %d is not seen whole (%d bytes seen)", n, bound, len(seen))
		case n > bound && (seen == out || len(seen) > bound+256):
			t.Fatalf("a result of %d bytes at a bound of %d: %d bytes seen", n, bound, len(seen))
		}
		ref := l.Report().Items[2].Ref
		if got, _, err := l.Recall(ref, 0, -1); err != nil || string(got) != out {
			t.Fatalf("recall of %d bytes: %d bytes, %v", n, len(got), err)
		}
	}
}
