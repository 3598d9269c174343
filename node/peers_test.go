package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harn-dev/harn/presence"
)

// TestPeerContextCappedAt4KBWith2000Sessions: 2,000 live sessions give
// at most 4 KB of context, the waiting ones first, then "and N more".
func TestPeerContextCappedAt4KBWith2000Sessions(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	evs := []presence.Event{ev("me", "me-1", presence.TypeUserPromptSubmit, 1, map[string]any{presence.AttrRepo: "shop"})}
	for i := range 2000 {
		typ := presence.TypeUserPromptSubmit
		if i == 1234 {
			typ = presence.TypeInputRequested
		}
		evs = append(evs, ev(fmt.Sprintf("s%04d", i), fmt.Sprintf("e%04d", i), typ, 2,
			map[string]any{presence.AttrTask: strings.Repeat("long task text ", 10)}))
	}
	mustIngest(t, n, evs...)
	got := n.roster.PeerContext("me")
	if len(got) > DefaultPeerContextBytes {
		t.Fatalf("peer context is %d bytes, over %d", len(got), DefaultPeerContextBytes)
	}
	if !strings.Contains(got, " more live sessions") {
		t.Fatalf("no \"and N more\" line:\n%s", got)
	}
	rows := strings.Split(got, "\n")
	if len(rows) < 4 || !strings.Contains(rows[3], "needs_input") {
		t.Fatalf("the waiting session is not first:\n%s", got)
	}
	if again := n.roster.PeerContext("me"); again != "" {
		t.Fatalf("unchanged capped table injected again (%d bytes)", len(again))
	}
}
