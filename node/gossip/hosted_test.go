package gossip

import (
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
)

// TestAHostedViewIsBoundedInGossip: a gossiped hosted view keeps at most
// hostedPeek lines of hostedPeekC runes, control characters stripped; a
// row over a frame gives its peek up first; a new peek changes the hash.
func TestAHostedViewIsBoundedInGossip(t *testing.T) {
	var peek []string
	for i := 0; i < 20; i++ {
		peek = append(peek, "\x1b[31m"+strings.Repeat("x", 500))
	}
	v := BoundedHosted(&api.HostedView{Worktree: strings.Repeat("w", 900), Peek: peek})
	if len(v.Peek) != hostedPeek || len([]rune(v.Peek[0])) > hostedPeekC || strings.ContainsRune(v.Peek[0], 0x1b) || len([]rune(v.Worktree)) > hostedPath {
		t.Fatalf("unbounded: %d lines, %d runes", len(v.Peek), len([]rune(v.Peek[0])))
	}
	if WithHosted("h", v) == WithHosted("h", &api.HostedView{Worktree: v.Worktree}) {
		t.Fatal("a new peek does not change the hash")
	}
	st := presence.State{SessionID: "hs-1", Agent: "claude-code", Activity: presence.ActivityNeedsInput, Task: strings.Repeat("t", 160)}
	e := EntryOf(&st, "h")
	e.Hosted = v
	b, err := EncodeDelta(e)
	if err != nil || len(b) > maxDeltaBytes {
		t.Fatalf("a hosted row over a frame: %d bytes, %v", len(b), err)
	}
	d, _ := DecodeDelta(b)
	if d.Hosted == nil || len(d.Hosted.Peek) > 2 || d.Task == "" {
		t.Fatalf("the peek was not given up first: %+v", d.Hosted)
	}
}
