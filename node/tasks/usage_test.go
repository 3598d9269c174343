package tasks

import (
	"testing"
	"time"

	"github.com/harn-dev/harn/runtime"
)

// modelCalls runs one task on a new runtime session of h that records
// the given model calls.
func modelCalls(t *testing.T, h *Host, session string, us ...runtime.Usage) {
	t.Helper()
	rt := h.Runtime()
	if err := rt.OpenSession(session, runtime.SessionConfig{}); err != nil {
		t.Fatal(err)
	}
	v, err := rt.Start(session, runtime.Request{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range us {
		if err := rt.ModelCall(v.ID, "m1", u, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Finish(v.ID, runtime.StatusSucceeded, "ok"); err != nil {
		t.Fatal(err)
	}
}

func TestUsageSumsTheLedgersModelCallsByKeyAndSince(t *testing.T) {
	clk := runtime.NewFakeClock()
	h, _ := newHost(t, clk)
	t0 := clk.Now()
	modelCalls(t, h, "s1",
		runtime.Usage{Agent: "harn", Node: "n1", Estimated: 10, Input: 20, Output: 5},
		runtime.Usage{Agent: "harn", Node: "n1", Estimated: 30, Input: 40, Output: 7, CacheRead: 16})
	clk.Advance(2 * time.Hour)
	modelCalls(t, h, "s2", runtime.Usage{Agent: "harn", Estimated: 1, Input: 100, Output: 50, CacheWrite: 3})

	rows, err := h.Usage("session", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]UsageRow{
		"s1": {Key: "s1", Model: "m1", Calls: 2, Estimated: 40, Input: 60, Output: 12, CacheRead: 16},
		"s2": {Key: "s2", Model: "m1", Calls: 1, Estimated: 1, Input: 100, Output: 50, CacheWrite: 3},
	}
	if len(rows) != 2 || rows[0] != want[rows[0].Key] || rows[1] != want[rows[1].Key] {
		t.Fatalf("by session %+v", rows)
	}
	if rows, _ := h.Usage("agent", time.Time{}); len(rows) != 1 || rows[0].Key != "harn" || rows[0].Calls != 3 || rows[0].Input != 160 || rows[0].Output != 62 {
		t.Fatalf("by agent %+v", rows)
	}
	// A call recorded without a node is this node's.
	if rows, _ := h.Usage("node", time.Time{}); len(rows) != 1 || rows[0].Key != "n1" || rows[0].Calls != 3 {
		t.Fatalf("by node %+v", rows)
	}
	if rows, _ := h.Usage("session", t0.Add(time.Hour)); len(rows) != 1 || rows[0] != want["s2"] {
		t.Fatalf("since %+v", rows)
	}
}

func TestUsageThroughDo(t *testing.T) {
	clk := runtime.NewFakeClock()
	h, _ := newHost(t, clk)
	modelCalls(t, h, "s1", runtime.Usage{Agent: "harn", Input: 7, Output: 3})
	res, err := h.Do(Action{Op: OpUsage, Text: "agent", Since: int(clk.Now().Add(-time.Minute).Unix())})
	if err != nil || len(res.Usage) != 1 || res.Usage[0].Input != 7 || res.Node != "n1" {
		t.Fatalf("%+v %v", res, err)
	}
}
