package board

import (
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
)

// TestDetailPageShowsEachCompaction: a harn session's context.compacted
// events are rows of the detail page's context section (method, sizes
// before and after, budget, archived items, note), escaped.
func TestDetailPageShowsEachCompaction(t *testing.T) {
	s, src, _ := newTestServer(t, nil)
	src.traces["s-ended"] = append(seedTrace(),
		presence.Event{ID: "c1", SessionID: "s-ended", Type: presence.TypeContextCompacted, TS: t0.Add(-70 * time.Minute), Seq: 5,
			Attrs: map[string]any{"method": "llm", "before_tokens": float64(3100), "after_tokens": float64(1800),
				"budget_tokens": float64(3300), "archived_items": float64(12), "checkpoint": float64(40)}},
		presence.Event{ID: "c2", SessionID: "s-ended", Type: presence.TypeContextCompacted, TS: t0.Add(-60 * time.Minute), Seq: 6,
			Attrs: map[string]any{"method": "fallback", "before_tokens": 3400, "after_tokens": 1900, "budget_tokens": 3300,
				"archived_items": 8, "note": "stall: <script>alert(1)</script>\x1b[31m"}})
	w := get(t, s.Handler(), "/s/s-ended")
	if w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	body := w.Body.String()
	i := strings.Index(body, `aria-label="context"`)
	if i < 0 {
		t.Fatal("no context section")
	}
	sec := body[i:]
	sec = sec[:strings.Index(sec, "</section>")]
	for _, want := range []string{
		`<td class="method">llm</td><td>3100</td><td>1800</td><td>3300</td><td>12</td>`,
		`<td class="method">fallback</td><td>3400</td><td>1900</td><td>3300</td><td>8</td><td>stall: &lt;script&gt;alert(1)&lt;/script&gt;`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("context section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Index(sec, ">fallback<") > strings.Index(sec, ">llm<") {
		t.Error("compactions are not newest first")
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(sec, "\x1b") {
		t.Error("a note reached the page unescaped")
	}
	// A session without compactions has no context section.
	if strings.Contains(get(t, s.Handler(), "/s/s-need").Body.String(), `aria-label="context"`) {
		t.Error("a context section without compactions")
	}
}
