package claims

import (
	"context"
	"testing"
)

// TestCommitCheckNamesOtherLiveHoldersWithoutClaiming: Held lists the
// paths other live sessions hold, with their holder, skips the asker's
// own and ended holders', and claims nothing.
func TestCommitCheckNamesOtherLiveHoldersWithoutClaiming(t *testing.T) {
	l := NewLocal()
	d := newTestDecider(ModeEnforce, l, fakeDescribe{"a": {Name: "Fixer", Node: "A"}, "gone": {Ended: true}})
	ctx := context.Background()
	d.Decide(ctx, Request{Session: "a", Repo: "R", Paths: []string{"x.go"}})
	d.Decide(ctx, Request{Session: "me", Repo: "R", Paths: []string{"mine.go"}})
	d.Decide(ctx, Request{Session: "gone", Repo: "R", Paths: []string{"old.go"}})
	hs := d.Held(Request{Session: "me", Repo: "R", Paths: []string{"x.go", "mine.go", "old.go", "free.go"}})
	if len(hs) != 1 || hs[0].Path != "x.go" || hs[0].Session != "a" || hs[0].Name != "Fixer" || hs[0].Node != "A" {
		t.Fatalf("holders %+v, want x.go held by a (Fixer on A)", hs)
	}
	if _, ok := l.ClaimOf("R", "free.go"); ok {
		t.Fatal("the check claimed free.go")
	}
	if hs := d.Held(Request{Repo: "R", Paths: []string{"mine.go"}}); len(hs) != 1 || hs[0].Session != "me" {
		t.Fatalf("a commit outside any session: holders %+v, want mine.go held by me", hs)
	}
	if hs := newTestDecider(ModeOff, l, nil).Held(Request{Repo: "R", Paths: []string{"x.go"}}); hs != nil {
		t.Fatalf("claims off: holders %+v", hs)
	}
}

// TestReleaseDropsNamedPathsOrAll: Release of named paths drops only
// those; Release all drops the rest; ClaimsOf reads the table.
func TestReleaseDropsNamedPathsOrAll(t *testing.T) {
	l := NewLocal()
	d := newTestDecider(ModeEnforce, l, nil)
	ctx := context.Background()
	d.Decide(ctx, Request{Session: "a", Repo: "R", Paths: []string{"x.go", "y.go"}})
	d.Decide(ctx, Request{Session: "a", Repo: "S", Paths: []string{"z.go"}})
	if got := d.ClaimsOf("a"); len(got) != 3 {
		t.Fatalf("claims %+v", got)
	}
	if err := d.Release(ctx, "a", "R", false, "x.go"); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.ClaimOf("R", "x.go"); ok {
		t.Fatal("x.go still held")
	}
	if got := d.ClaimsOf("a"); len(got) != 2 {
		t.Fatalf("after releasing x.go: %+v", got)
	}
	if err := d.Release(ctx, "a", "", true); err != nil {
		t.Fatal(err)
	}
	if got := d.ClaimsOf("a"); len(got) != 0 {
		t.Fatalf("after release all: %+v", got)
	}
}
