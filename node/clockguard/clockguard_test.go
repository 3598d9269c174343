package clockguard

import (
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/presence"
)

var now = time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)

// TestEventFromTheFutureGetsReceiptTime: a time more than MaxAhead after
// now becomes now with the original in orig_ts; a time at the bound, in the
// past, or exactly the Unix epoch is kept.
func TestEventFromTheFutureGetsReceiptTime(t *testing.T) {
	y2100 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		ts      time.Time
		clamped bool
	}{
		{"2100", y2100, true},
		{"just past the bound", now.Add(MaxAhead + time.Millisecond), true},
		{"at the bound", now.Add(MaxAhead), false},
		{"now", now, false},
		{"an hour ago", now.Add(-time.Hour), false},
		{"the Unix epoch", time.Unix(0, 0).UTC(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := []presence.Event{{ID: "e", SessionID: "s", Type: presence.TypeToolPreUse, TS: tc.ts}}
			got := Guard(evs, now)
			if !tc.clamped {
				if len(got) != 0 || !evs[0].TS.Equal(tc.ts) || evs[0].Attrs[AttrOrigTS] != nil {
					t.Fatalf("changed: %+v %+v", got, evs[0])
				}
				return
			}
			if len(got) != 1 || !evs[0].TS.Equal(now) || evs[0].AttrString(AttrOrigTS) != presence.FormatTime(tc.ts) {
				t.Fatalf("not clamped: %+v %+v", got, evs[0])
			}
			msg := got[0].Message()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, presence.FormatTime(tc.ts)) {
				t.Fatalf("message %q", msg)
			}
		})
	}
}

// TestGuardBoundsEveryTime: after Guard, no event lies more than MaxAhead
// after now, and every event it did not report is unchanged.
func TestGuardBoundsEveryTime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 20).Draw(t, "n")
		evs := make([]presence.Event, n)
		orig := make([]time.Time, n)
		for i := range evs {
			off := rapid.Int64Range(-int64(100*365*24*time.Hour), int64(100*365*24*time.Hour)).Draw(t, "off")
			evs[i] = presence.Event{ID: string(rune('a' + i)), SessionID: "s", Type: "x", TS: now.Add(time.Duration(off))}
			orig[i] = evs[i].TS
		}
		got := Guard(evs, now)
		reported := map[string]bool{}
		for _, c := range got {
			reported[c.EventID] = true
		}
		for i, e := range evs {
			if e.TS.After(now.Add(MaxAhead)) {
				t.Fatalf("event %d at %v, past the bound", i, e.TS)
			}
			if !reported[e.ID] && !e.TS.Equal(orig[i]) {
				t.Fatalf("event %d changed without a report", i)
			}
		}
	})
}
