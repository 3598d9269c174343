package api_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/api"
)

// rowKeys are the keys of a roster row's JSON (`harn agents list --json`,
// `agents show --json`, `--watch --json`, `agents wait --json`, the
// board's JSON, webhooks): scripts and the acceptance checks read them, so
// none may be renamed or dropped.
var rowKeys = []string{
	"session_id", "parent_session_id", "agent", "node", "name", "session_name",
	"activity", "activity_updated_at", "activity_source", "last_evidence_at", "waiting_on", "waiting_child",
	"silent_since", "task_state", "task_state_updated_at", "blocker_reason", "lifecycle_reason", "task",
	"claims", "claim_count", "pending_claims", "suggested_session_name", "session_name_seen_for",
	"started_at", "last_event_at", "ended", "ended_at", "end_reason", "agent_pid", "agent_pid_start",
	"cwd", "project", "repo", "branch", "events",
	"reachable", "unreachable_since", "source", "harn_task", "hosted",
}

// fullRow is a row with every field set.
func fullRow() *api.SessionRow {
	ns := func(m int) int64 { return time.Date(2026, 8, 12, 10, m, 0, 0, time.UTC).UnixNano() }
	return &api.SessionRow{SessionId: "s-1", ParentSessionId: "p-1", Agent: "claude-code", Node: "n1", Name: "Flint",
		SessionName: "Agent Flint", Activity: "needs_input", ActivityUpdatedAtUnixNano: ns(1), ActivitySource: "hook",
		LastEvidenceAtUnixNano: ns(2), WaitingOn: "Bash", WaitingChild: "c-1", SilentSinceUnixNano: ns(3),
		TaskState: "blocked", TaskStateUpdatedAtUnixNano: ns(4), BlockerReason: "review", LifecycleReason: "why",
		Task: "fix it", Claims: []string{"/a"}, ClaimCount: 3, PendingClaims: []string{"/b"},
		SuggestedSessionName: "Opal", SessionNameSeenFor: "Opal", StartedAtUnixNano: ns(5), LastEventAtUnixNano: ns(6),
		Ended: true, EndedAtUnixNano: ns(7), EndReason: "exit", AgentPid: 42, AgentPidStart: 7, Cwd: "/w/shop",
		Project: "shop", Repo: "shop", Branch: "main", Events: 9, Reachable: true, UnreachableSinceUnixNano: ns(8),
		Source: "gossip", HarnTask: &api.HarnTask{Id: "t-1", State: "running", Status: "s", Text: "x", QueueDepth: 2, PendingCalls: []string{"c"}},
		Hosted: &api.HostedView{Worktree: "/wt", Branch: "b", LaunchedAs: "claude", Attached: 1, Queued: 2, Peek: []string{"$"}}}
}

// TestRowJSONKeysAndRoundTrip: a row's JSON has exactly rowKeys (a key
// renamed, dropped or added fails), with the acceptance checks' values
// where they read them, and reads back to the same row.
func TestRowJSONKeysAndRoundTrip(t *testing.T) {
	r := fullRow()
	b, err := api.MarshalRowJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	want := slices.Clone(rowKeys)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("row JSON keys\n got %s\nwant %s", strings.Join(got, " "), strings.Join(want, " "))
	}
	for k, v := range map[string]string{"session_id": `"s-1"`, "node": `"n1"`, "activity": `"needs_input"`,
		"task_state": `"blocked"`, "reachable": "true", "started_at": `"2026-08-12T10:05:00.000Z"`} {
		if string(m[k]) != v {
			t.Errorf("%s = %s, want %s", k, m[k], v)
		}
	}
	var hosted map[string]json.RawMessage
	if err := json.Unmarshal(m["hosted"], &hosted); err != nil || string(hosted["attached"]) != "1" || string(hosted["worktree"]) != `"/wt"` {
		t.Errorf("hosted = %s", m["hosted"])
	}
	back, err := api.UnmarshalRowJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, r) {
		t.Fatalf("round trip\n got %v\nwant %v", back, r)
	}
	// The always-written keys of an empty row, and its defaults.
	b, _ = api.MarshalRowJSON(&api.SessionRow{SessionId: "s"})
	if string(b) != `{"session_id":"s","activity":"unknown","task_state":"active","ended":false,"events":0,"reachable":false}` {
		t.Errorf("empty row: %s", b)
	}
}
