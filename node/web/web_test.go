package web

import (
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/presence"
)

func TestUrgencyLessIsAgentsListOrder(t *testing.T) {
	rows := []board.Row{
		{SessionRow: &api.SessionRow{SessionId: "idle", Activity: "idle", TaskState: "active", ActivityUpdatedAtUnixNano: api.UnixNano(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}},
		{SessionRow: &api.SessionRow{SessionId: "blocked", Activity: "working", TaskState: "blocked", TaskStateUpdatedAtUnixNano: api.UnixNano(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}},
		{SessionRow: &api.SessionRow{SessionId: "ask", Activity: "needs_input", TaskState: "blocked", ActivityUpdatedAtUnixNano: api.UnixNano(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}},
		{SessionRow: &api.SessionRow{SessionId: "work", Activity: "working", TaskState: "active", ActivityUpdatedAtUnixNano: api.UnixNano(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}}}
	sort.Slice(rows, func(i, j int) bool { return UrgencyLess(rows[i], rows[j]) })
	var got []string
	for _, r := range rows {
		got = append(got, r.SessionId)
	}
	if strings.Join(got, " ") != "ask blocked work idle" {
		t.Fatalf("order %v", got)
	}
}

// TestGossipNotifierFiresOnlyWhenAPeerEntryChanged: a newer delta and a
// member event are changes; a repeated delta and a digest are not.
func TestGossipNotifierFiresOnlyWhenAPeerEntryChanged(t *testing.T) {
	tbl := gossip.NewTable()
	count := 0
	g := gossipNotifier{Handler: &gossip.Handler{Self: "me", Table: tbl, Log: slog.New(slog.DiscardHandler)}, notify: func() { count++ }}
	st := presence.NewState("peer-s1")
	st.Events = 1
	e := gossip.EntryOf(&st, presence.PresenceHash(&st))
	b, err := gossip.EncodeDelta(e)
	if err != nil {
		t.Fatal(err)
	}
	g.ApplyDelta("peer", "peer-s1", 1, b)
	g.ApplyDelta("peer", "peer-s1", 1, b) // the same version again
	g.ApplyDelta("me", "peer-s1", 2, b)   // our own
	g.ApplyDelta("peer", gossip.DigestKey, 3, []byte("x"))
	if count != 1 {
		t.Fatalf("%d notices for one new entry, want 1", count)
	}
	g.MemberEvent(mesh.MemberEvent{})
	if count != 2 {
		t.Fatalf("a member event gave no notice")
	}
}
