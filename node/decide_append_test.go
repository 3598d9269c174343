package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/tasks"
)

// TestAppendAnswersTheCallsQuestionInTheSameRoundTrip: an Append that
// carries a tool call's question (decide) stores the events and answers
// it in the reply, so that a tool call's hook makes one round trip; an
// Append without one gets no decision.
func TestAppendAnswersTheCallsQuestionInTheSameRoundTrip(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	n := openNode(t, cfg)
	cl := dialClient(t, cfg.Socket)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cases := []struct {
		name, id     string
		decide       *api.DecideQuery
		wantDecision string
		wantReason   string
	}{
		{"no question", "01JDEC00000000000000000001", nil, "", ""},
		{"a session without a task", "01JDEC00000000000000000002",
			&api.DecideQuery{Phase: tasks.PhasePre, Session: "s-dec", Tool: "Bash", Input: []byte(`{"command":"ls"}`)}, tasks.DecideNone, ""},
		{"after the call", "01JDEC00000000000000000003",
			&api.DecideQuery{Phase: tasks.PhasePost, Session: "s-dec", Tool: "Bash", Call: "c1"}, tasks.DecideNone, ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := ev("s-dec", c.id, "tool.pre_use", i+1, map[string]any{"cwd": "/tmp", "tool": "Bash"})
			if i == 0 {
				e = ev("s-dec", c.id, "session.start", i+1, map[string]any{"cwd": "/tmp"})
			}
			res, err := cl.Append(ctx, &api.AppendRequest{Events: []*api.Event{wire.EventToAPI(&e)}, Decide: c.decide})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Ids) != 1 {
				t.Fatalf("the event was not stored: %v", res.Ids)
			}
			if c.decide == nil {
				if res.Decision != nil {
					t.Fatalf("an Append without a question got a decision: %v", res.Decision)
				}
				return
			}
			if res.Decision == nil {
				t.Fatal("an Append with a question got no decision")
			}
			if res.Decision.Decision != c.wantDecision || !strings.Contains(res.Decision.Reason, c.wantReason) {
				t.Fatalf("decision %q (%q), want %q (with %q)", res.Decision.Decision, res.Decision.Reason, c.wantDecision, c.wantReason)
			}
		})
	}
	st, err := n.Resolve("s-dec")
	if err != nil {
		t.Fatal(err)
	}
	if st.Events != len(cases) {
		t.Fatalf("the session has %d events, want %d", st.Events, len(cases))
	}
}
