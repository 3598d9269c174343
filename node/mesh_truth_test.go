package node

import (
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/presence"
)

// TestMeshWidePeerContextAndGlanceFields: a session on another node is
// in the peer context, marked with its node, and its roster row there
// carries what it waits on, its evidence time, repository, branch and
// the name it showed.
func TestMeshWidePeerContextAndGlanceFields(t *testing.T) {
	c := startTestCluster(t, 2, "local")
	a, b := c.nodes[0], c.nodes[1]
	cbIngest(t, a, "me", presence.TypeUserPromptSubmit, map[string]any{presence.AttrRepo: "shop"})
	cbIngest(t, b, "far", presence.TypeUserPromptSubmit, map[string]any{presence.AttrRepo: "shop", presence.AttrBranch: "fix/round"})
	cbIngest(t, b, "far", presence.TypeInputRequested, map[string]any{presence.AttrSummary: "Edit src/app.go"})
	var row roster.Entry
	waitFor(t, 10*time.Second, "the remote row with its glance fields", func() bool {
		e, ok := rosterState(a, "far")
		row = e
		return ok && e.Source == "gossip" && e.State().WaitingOn == "Edit src/app.go"
	})
	st := row.State()
	if st.Repo != "shop" || st.Branch != "fix/round" || st.LastEvidenceAt.IsZero() || st.Node != b.Name() ||
		st.Activity != presence.ActivityNeedsInput {
		t.Fatalf("remote row %+v", st)
	}
	ctx := a.roster.PeerContext("me")
	line := ""
	for _, l := range strings.Split(ctx, "\n") {
		if strings.Contains(l, "Agent "+st.Name+" ") {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, "| "+b.Name()+" |") || !strings.Contains(line, "Edit src/app.go") {
		t.Fatalf("the remote session is not in the peer context with its node:\n%s", ctx)
	}
	if again := a.roster.PeerContext("me"); again != "" {
		t.Fatalf("unchanged mesh-wide table injected again: %q", again)
	}
	cbIngest(t, b, "far", presence.TypeTaskSet, map[string]any{presence.AttrTask: "round half up"})
	waitFor(t, 10*time.Second, "the remote task", func() bool {
		e, ok := rosterState(a, "far")
		return ok && e.State().Task == "round half up"
	})
	if got := a.roster.PeerContext("me"); !strings.Contains(got, "round half up") {
		t.Fatalf("a remote change did not change the hash: %q", got)
	}
}
