package cli

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
)

// BenchmarkRosterJSON10k is the CLI's own cost of `agents list --json`
// over 10,000 entries as the node writes them: decode what sorting needs,
// apply the silence rule, sort by urgency, write.
func BenchmarkRosterJSON10k(b *testing.B) {
	entries := make([]*api.SessionRow, 10000)
	acts := []string{"working", "idle", "needs_input", "unknown"}
	for i := range entries {
		st := presence.NewState(fmt.Sprintf("%08x-5b7d-4e21-9c3a-0d6e2f4b1a77", i))
		st.Activity = presence.Activity(acts[i%len(acts)])
		st.Agent, st.Node, st.Name, st.Cwd = "claude-code", "buildbox", "Flint", fmt.Sprintf("/home/ana/proj%d", i%50)
		st.ActivityUpdatedAt = now.Add(-time.Duration(i) * time.Second)
		st.LastEventAt, st.StartedAt, st.TaskStateUpdatedAt = st.ActivityUpdatedAt, st.ActivityUpdatedAt, st.ActivityUpdatedAt
		st.Events = 3
		entries[i] = api.RowOf(&st)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows, err := decodeRoster(entries, now, defaultSilenceAfter)
		if err != nil {
			b.Fatal(err)
		}
		if err := writeRosterJSON(io.Discard, rows); err != nil {
			b.Fatal(err)
		}
	}
}
