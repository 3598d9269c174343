package alerts

import (
	"testing"
	"time"

	"github.com/harn-dev/harn/node/notify"
	"github.com/harn-dev/harn/presence"
)

// TestAnswerWithinTheDebounceDropsThePendingNeedsInput: a session asks
// for permission (needs_input arms the 3 s debounce); the operator answers
// after 1 s, the session folds the answer and the room is told at once:
// the debounce is cancelled before Resolved returns, so no needs_input
// message is ever sent (with the fake clock advanced well past it).
func TestAnswerWithinTheDebounceDropsThePendingNeedsInput(t *testing.T) {
	f := newFixture(t)
	f.room.Baseline(nil)
	evs := []presence.Event{
		{ID: "1", SessionID: "s1", Type: presence.TypeToolPreUse, TS: t0, Agent: "claude-code", Attrs: map[string]any{presence.AttrTool: "Bash"}},
		{ID: "2", SessionID: "s1", Type: presence.TypeInputRequested, TS: t0.Add(time.Millisecond), Agent: "claude-code",
			Attrs: map[string]any{presence.AttrTool: "Bash", presence.AttrRequestKey: "k1", presence.AttrSummary: "Bash: go"}},
	}
	f.src.set(presence.Fold(append([]presence.Event(nil), evs...)))
	f.room.observe()
	if f.pending() != 1 {
		t.Fatalf("%d timers armed, want the needs_input debounce", f.pending())
	}
	f.clk.Advance(time.Second)
	evs = append(evs, presence.Event{ID: "3", SessionID: "s1", Type: presence.TypeInputResolved, TS: t0.Add(time.Second), Agent: "claude-code",
		Attrs: map[string]any{presence.AttrRequestKey: "k1", presence.AttrDecision: "allow", presence.AttrBy: "operator@n2"}})
	answered := presence.Fold(evs)
	if answered.Activity != presence.ActivityWorking {
		t.Fatalf("the answer left %s", answered.Activity)
	}
	f.src.set(answered)
	f.room.Resolved()
	if f.pending() != 0 {
		t.Fatalf("%d timers still armed after the answer: the needs_input message could still go", f.pending())
	}
	f.clk.Advance(3 * notify.DefaultDebounce)
	select {
	case p := <-f.rec.got:
		t.Fatalf("sent %s for %s after the answer", p.Kind, p.Session.ID)
	default:
	}
	for _, w := range f.room.Stats().Webhooks {
		if w.Queued != 0 || w.Sent != 0 {
			t.Fatalf("webhook %s: %d queued, %d sent after the answer", w.ID, w.Queued, w.Sent)
		}
	}
}
