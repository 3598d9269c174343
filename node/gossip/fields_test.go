package gossip

import (
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// TestRemoteRowCarriesGlanceFields: what a reader elsewhere needs at a
// glance (what it waits on, its latest evidence, where it runs, the name
// it showed) travels in the delta and comes out of the table as state.
func TestRemoteRowCarriesGlanceFields(t *testing.T) {
	ev := time.Date(2026, 8, 12, 10, 3, 0, 0, time.UTC)
	s := presence.State{SessionID: "s1", Name: "Flint", Activity: presence.ActivityNeedsInput,
		TaskState: presence.TaskActive, WaitingOn: "Edit src/app.go", LastEvidenceAt: ev,
		Repo: "shop", Branch: "fix/rounding", SessionNameSeenFor: "Agent Flint - fix rounding"}
	d, err := EncodeDelta(EntryOf(&s, "h1"))
	if err != nil {
		t.Fatal(err)
	}
	tab := NewTable()
	h := &Handler{Self: "me", Table: tab, Log: discard()}
	h.ApplyDelta("peer", "s1", 7, d)
	e, ok := tab.Get("peer", "s1")
	if !ok {
		t.Fatal("delta not applied")
	}
	got := e.State("peer")
	if got.WaitingOn != s.WaitingOn || !got.LastEvidenceAt.Equal(ev) || got.Repo != "shop" ||
		got.Branch != "fix/rounding" || got.SessionNameSeenFor != s.SessionNameSeenFor || got.Node != "peer" {
		t.Fatalf("remote state %+v", got)
	}
	if got.Project() != "shop" {
		t.Fatalf("project %q", got.Project())
	}
}

// TestEncodeDeltaWithGlanceFieldsFitsOneFrame: the new fields at their
// longest still fit one frame.
func TestEncodeDeltaWithGlanceFieldsFitsOneFrame(t *testing.T) {
	long := strings.Repeat("ü", 4000)
	id := strings.Repeat("i", presence.MaxIDLen)
	s := presence.State{SessionID: id, ParentSessionID: id, Agent: strings.Repeat("a", presence.MaxTypeLen),
		Task: long, BlockerReason: long, Name: long, ActivitySource: long, EndReason: long,
		WaitingOn: long, Repo: long, Branch: long, SessionNameSeenFor: long,
		LastEvidenceAt: time.Now(), ActivityUpdatedAt: time.Now(), StartedAt: time.Now(),
		LastEventAt: time.Now(), TaskStateUpdatedAt: time.Now(), Claims: []string{long, long}}
	b, err := EncodeDelta(EntryOf(&s, strings.Repeat("h", 32)))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxDeltaBytes {
		t.Fatalf("delta is %d bytes, over %d", len(b), maxDeltaBytes)
	}
	// A usual session keeps every field.
	u := presence.State{SessionID: "s", WaitingOn: "Bash: git", Repo: "shop", Branch: "main",
		SessionNameSeenFor: "Agent Flint - fix rounding", LastEvidenceAt: time.Now()}
	b, _ = EncodeDelta(EntryOf(&u, "h"))
	e, err := DecodeDelta(b)
	if err != nil {
		t.Fatal(err)
	}
	got := e.State("n")
	if got.WaitingOn != "Bash: git" || got.Repo != "shop" || got.Branch != "main" ||
		got.SessionNameSeenFor != "Agent Flint - fix rounding" || got.LastEvidenceAt.IsZero() {
		t.Errorf("delta lost a glance field: %+v", got)
	}
}

// TestPublisherRefreshesEvidenceWithoutHashChange: a busy session whose
// hash does not move still sends a delta once its evidence is
// EvidenceRefresh newer than the last one sent, and when the name it
// showed changes; not more often.
func TestPublisherRefreshesEvidenceWithoutHashChange(t *testing.T) {
	clk := clock.NewFake(time.Unix(100, 0))
	out := &recBroadcaster{}
	p := NewPublisher(clk, discard(), out)
	at := time.Unix(1000, 0)
	s := presence.State{SessionID: "s", LastEvidenceAt: at}
	p.Publish(&s, "h")
	s.LastEvidenceAt = at.Add(EvidenceRefresh - time.Second)
	p.Publish(&s, "h")
	if len(out.keys) != 1 {
		t.Fatalf("fresh evidence sent %d deltas, want 1", len(out.keys))
	}
	s.LastEvidenceAt = at.Add(EvidenceRefresh)
	p.Publish(&s, "h")
	if len(out.keys) != 2 {
		t.Fatalf("stale evidence: %d deltas, want 2", len(out.keys))
	}
	s.SessionNameSeenFor = "Agent Flint - t"
	p.Publish(&s, "h")
	if len(out.keys) != 3 {
		t.Fatalf("seen name: %d deltas, want 3", len(out.keys))
	}
}

// TestGossipTrimsInTrimOrder: a row over one frame gives up detail in
// TrimOrder's order, only as far as it must: pending claims alone too
// large go first and the rest stays; the ids and both axes always stay.
func TestGossipTrimsInTrimOrder(t *testing.T) {
	long := strings.Repeat("p", 150)
	s := presence.State{SessionID: "s-trim", Activity: presence.ActivityNeedsInput, TaskState: presence.TaskBlocked,
		Task: "fix the rounding", Cwd: "/src/shop", Claims: []string{"a.go"}, AgentPID: 77,
		PendingClaims: []string{long, long, long, long, long, long}, ActivityUpdatedAt: time.Unix(1000, 0)}
	b, err := EncodeDelta(EntryOf(&s, "h"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxDeltaBytes {
		t.Fatalf("delta %d bytes, over %d", len(b), maxDeltaBytes)
	}
	e, err := DecodeDelta(b)
	if err != nil {
		t.Fatal(err)
	}
	got := e.State("n")
	if len(got.PendingClaims) != 0 || got.AgentPID != 0 {
		t.Errorf("the first step was not applied: %+v", got)
	}
	if got.Task != s.Task || got.Cwd != s.Cwd || len(got.Claims) != 1 {
		t.Errorf("a later step was applied though the first was enough: %+v", got)
	}
	if got.SessionID != "s-trim" || got.Activity != s.Activity || got.TaskState != s.TaskState {
		t.Errorf("ids or axes lost: %+v", got)
	}
	// The order is declared once and each step says what it gives up.
	for i, st := range TrimOrder {
		if st.What == "" || st.Do == nil {
			t.Errorf("step %d is not declared", i)
		}
	}
}
