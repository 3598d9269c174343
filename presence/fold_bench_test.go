package presence

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchSession is a realistic session of n events as read from a ledger: in
// (ts, id) order, ids like ULIDs (time-prefixed, so they rise with ts),
// mostly tool.pre_use/tool.post_use pairs inside prompted turns, with the
// occasional permission prompt, narration, output, claim, task and
// lifecycle event.
func benchSession(n int) []Event {
	r := rand.New(rand.NewPCG(1, 2))
	t := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	evs := make([]Event, 0, n)
	add := func(typ string, attrs map[string]any) {
		t = t.Add(time.Duration(1+r.IntN(1500)) * time.Millisecond)
		evs = append(evs, Event{
			ID:        fmt.Sprintf("01JH%010X%06X", t.UnixMilli(), len(evs)),
			SessionID: "s-42", Type: typ, TS: t, Agent: "claude-code",
			Node: "buildbox", Seq: uint64(len(evs) + 1), Attrs: attrs,
		})
	}
	tools := []string{"Bash", "Read", "Edit", "Grep", "Write"}
	add(TypeSessionStart, map[string]any{AttrSessionName: "harn-7", AttrCwd: "/src/harn", AttrAgentPID: float64(4242)})
	add(TypeTaskSet, map[string]any{AttrTask: "add the JSONL decoder"})
	for len(evs) < n {
		add(TypeUserPromptSubmit, nil)
		for k := 5 + r.IntN(20); k > 0 && len(evs) < n-2; k-- {
			tool := tools[r.IntN(len(tools))]
			add(TypeToolPreUse, map[string]any{AttrTool: tool})
			switch x := r.IntN(40); {
			case x == 0:
				add(TypeInputRequested, map[string]any{AttrRequestKey: "perm-" + tool})
				add(TypeInputResolved, map[string]any{AttrRequestKey: "perm-" + tool})
			case x < 3:
				add(TypeClaimWrite, map[string]any{AttrPaths: []string{fmt.Sprintf("presence/file%d.go", r.IntN(30))}})
			case x < 6:
				add(TypeNarration, nil)
			case x < 8:
				add(TypeOutputChunk, nil)
			}
			add(TypeToolPostUse, map[string]any{AttrTool: tool})
		}
		if r.IntN(10) == 0 {
			add(TypeTaskState, map[string]any{AttrTaskState: "blocked", AttrReason: "waiting for review"})
			add(TypeTaskState, map[string]any{AttrTaskState: "active"})
		}
		add(TypeTurnStop, nil)
	}
	return evs[:n]
}

func benchFold(b *testing.B, in []Event) {
	b.ReportAllocs()
	work := make([]Event, len(in))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Fold sorts in place, so each iteration folds a fresh copy. The
		// copy is taken outside the timer.
		b.StopTimer()
		copy(work, in)
		b.StartTimer()
		s := Fold(work)
		if s.Events != len(in) {
			b.Fatalf("folded %d of %d events", s.Events, len(in))
		}
	}
	b.ReportMetric(float64(b.N*len(in))/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkFold(b *testing.B) {
	const n = 1000
	b.Run("in_order", func(b *testing.B) { benchFold(b, benchSession(n)) })
	b.Run("shuffled", func(b *testing.B) {
		evs := benchSession(n)
		r := rand.New(rand.NewPCG(3, 4))
		r.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		benchFold(b, evs)
	})
}
