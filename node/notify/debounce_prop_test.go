package notify

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestDebounceProperty: for any sequence of a state coming and going, the
// engine tells exactly the episodes the rule selects: an episode that held
// for the whole window, unless a message of the same kind went out less
// than the cooldown before. The model below is written from that rule
// alone.
func TestDebounceProperty(t *testing.T) {
	const D, C = 3 * time.Second, 10 * time.Second
	rapid.Check(t, func(rt *rapid.T) {
		clk, snd := newFakeClock(), &recSender{}
		e := New(Config{Logger: quiet(), Debounce: D, Cooldown: C, QueueSize: 1000}, clk, snd, nil)
		defer e.Close()
		hook, _ := NewWebhook("http://127.0.0.1:1/x", "needs_input", "json")
		_ = e.SetWebhooks([]Webhook{hook})

		type episode struct{ start, end time.Time } // end zero: still holding
		var eps []episode
		holding := false
		start := clk.Now()
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			if rapid.Bool().Draw(rt, "toggle") {
				holding = !holding
				now := clk.Now()
				if holding {
					eps = append(eps, episode{start: now})
					e.Observe([]Session{needsInput("s1")})
				} else {
					eps[len(eps)-1].end = now
					e.Observe([]Session{view("s1")})
				}
			}
			clk.Advance(time.Duration(rapid.IntRange(0, 12).Draw(rt, "halfseconds")) * 500 * time.Millisecond)
		}
		end := clk.Now()

		var want []time.Time
		var lastSent time.Time
		for _, ep := range eps {
			fire := ep.start.Add(D)
			stillHeld := ep.end.IsZero() || !ep.end.Before(fire)
			if !stillHeld || fire.After(end) {
				continue
			}
			if !lastSent.IsZero() && fire.Sub(lastSent) < C {
				continue
			}
			lastSent = fire
			want = append(want, ep.start)
		}

		deadline := time.Now().Add(5 * time.Second)
		for snd.count() < len(want) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		var got []time.Time
		for _, r := range snd.all() {
			var p Payload
			if err := json.Unmarshal(r.Body, &p); err != nil {
				rt.Fatal(err)
			}
			at, err := time.Parse(time.RFC3339Nano, p.At)
			if err != nil {
				rt.Fatal(err)
			}
			got = append(got, at)
		}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			rt.Fatalf("told episodes starting at %v, want %v (start %v)", got, want, start)
		}
	})
}
