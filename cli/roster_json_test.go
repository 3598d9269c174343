package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/node/api"
	noderoster "github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/presence"
)

// TestNodeWrittenRosterJSONEqualsTheCLIsOwn: `agents list --json` is the
// same whether the node sorts the rows (noderoster.Rows, what the CLI
// asks for) or the CLI sorts the node's rows itself: the same sessions in the same urgency
// order, each with the same fields, silence applied with the reader's
// threshold.
func TestNodeWrittenRosterJSONEqualsTheCLIsOwn(t *testing.T) {
	acts := []presence.Activity{presence.ActivityWorking, presence.ActivityIdle, presence.ActivityNeedsInput, presence.ActivityUnknown}
	tasks := []presence.TaskState{presence.TaskActive, presence.TaskBlocked, presence.TaskDone}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 30).Draw(t, "sessions")
		after := time.Duration(rapid.IntRange(-1, 10).Draw(t, "after-min")) * time.Minute
		entries := make([]noderoster.Entry, n)
		raw := make([]*api.SessionRow, n)
		for i := range entries {
			st := presence.NewState(fmt.Sprintf("s-%03d", rapid.IntRange(0, 999).Draw(t, "id")*1000+i))
			st.Agent, st.Node, st.Name = "claude-code", "buildbox", "Flint"
			st.Activity = acts[rapid.IntRange(0, len(acts)-1).Draw(t, "activity")]
			st.TaskState = tasks[rapid.IntRange(0, len(tasks)-1).Draw(t, "task")]
			at := now.Add(-time.Duration(rapid.IntRange(0, 3600).Draw(t, "age-s")) * time.Second)
			st.ActivityUpdatedAt, st.TaskStateUpdatedAt, st.StartedAt = at, at.Add(-time.Minute), at.Add(-time.Hour)
			st.LastEvidenceAt = at.Add(time.Duration(rapid.IntRange(0, 600).Draw(t, "evidence-s")) * time.Second)
			st.LastEventAt, st.Events = st.LastEvidenceAt, 3
			st.Ended = rapid.IntRange(0, 9).Draw(t, "ended") == 0
			mk := func() *api.SessionRow { // two rows: the node's Rows changes its own in place
				r := api.RowOf(&st)
				r.Reachable, r.Source = true, "registry"
				return r
			}
			entries[i], raw[i] = noderoster.Entry{SessionRow: mk()}, mk()
		}
		fromNode, err := decodeRoster(noderoster.Rows(entries, now, after), now, after)
		if err != nil {
			t.Fatal(err)
		}
		var nodeOut bytes.Buffer
		if err := writeRosterJSON(&nodeOut, fromNode); err != nil {
			t.Fatal(err)
		}
		rows, err := decodeRoster(raw, now, after)
		if err != nil {
			t.Fatal(err)
		}
		var own bytes.Buffer
		if err := writeRosterJSON(&own, rows); err != nil {
			t.Fatal(err)
		}
		var a, b []map[string]any
		if err := json.Unmarshal(nodeOut.Bytes(), &a); err != nil {
			t.Fatalf("the node's array does not parse: %v\n%s", err, nodeOut.Bytes())
		}
		if err := json.Unmarshal(own.Bytes(), &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("node:\n%s\ncli:\n%s", nodeOut.Bytes(), own.Bytes())
		}
		if n == 0 && nodeOut.String() != own.String() {
			t.Fatalf("empty roster: node %q, cli %q", nodeOut.String(), own.String())
		}
	})
}
