package board

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/harn-dev/harn/util/clock"
)

func TestDecodeRowReadsTheRosterJSON(t *testing.T) {
	// An entry as `harn agents list --json` prints it, with the fields the
	// board reads.
	b := []byte(`{"session_id":"s1","name":"wren","agent":"claude-code","node":"alpha","task":"write it",
	"activity":"working","activity_updated_at":"2026-08-12T10:02:00.000Z","activity_source":"tool.pre_use",
	"task_state":"blocked","task_state_updated_at":"2026-08-12T09:30:00Z","blocker_reason":"needs review",
	"last_evidence_at":"2026-08-12T10:03:00.5Z","waiting_on":"s2","project":"harn","branch":"main",
	"silent_since":"2026-08-12T10:04:00Z","waiting_child":"s3","parent_session_id":"s0","reachable":false,
	"unreachable_since":"2026-08-12T10:05:00Z","claims":["a.go","b/**"],"suggested_session_name":"[BLOCKED] - Agent wren - write it",
	"ended":true,"end_reason":"session.end","cwd":"/src","source":"registry","events":12,
	"pending_requests":[{"id":"r1","kind":"permission","summary":"Bash"},"r2"],
	"harn_task":{"id":"t1","state":"running","pending_calls":["c1"]}}`)
	r, err := DecodeRow(b)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { x, _ := time.Parse(time.RFC3339Nano, s); return x }
	checks := []struct {
		name string
		ok   bool
	}{
		{"ids", r.SessionID == "s1" && r.ParentSessionID == "s0" && r.Name == "wren" && r.Agent == "claude-code" && r.Node == "alpha"},
		{"task", r.Task == "write it"},
		{"activity", r.Activity == "working" && r.ActivitySource == "tool.pre_use" && r.ActivityUpdatedAt.Equal(at("2026-08-12T10:02:00Z"))},
		{"lifecycle", r.TaskState == "blocked" && r.BlockerReason == "needs review" && r.TaskStateUpdatedAt.Equal(at("2026-08-12T09:30:00Z"))},
		{"evidence", r.LastEvidenceAt.Equal(at("2026-08-12T10:03:00.5Z")) && r.Evidence().Equal(r.LastEvidenceAt)},
		{"waits", r.WaitingOn == "s2" && r.WaitingChild == "s3" && r.SilentSince.Equal(at("2026-08-12T10:04:00Z"))},
		{"where", r.Project == "harn" && r.Branch == "main" && r.Cwd == "/src"},
		{"reach", !r.Reachable && r.UnreachableSince.Equal(at("2026-08-12T10:05:00Z")) && r.Source == "registry"},
		{"claims", strings.Join(r.Claims, ",") == "a.go,b/**"},
		{"name", r.SuggestedSessionName == "[BLOCKED] - Agent wren - write it"},
		{"ended", r.Ended && r.EndReason == "session.end" && r.Events == 12},
		{"requests", len(r.PendingRequests) == 3 && r.PendingRequests[0] == Request{ID: "r1", Kind: "permission", Summary: "Bash"} &&
			r.PendingRequests[1] == Request{ID: "r2", Kind: "permission"} &&
			r.PendingRequests[2] == Request{ID: "c1", Kind: "confirmation", TaskID: "t1"}},
		{"task object", r.HarnTask != nil && r.HarnTask.ID == "t1" && r.HarnTask.State == "running" && r.HasTask()},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
}

func TestDecodeRowIsLenient(t *testing.T) {
	cases := []struct {
		name string
		json string
		ok   func(Row) bool
	}{
		{"absent fields", `{"session_id":"s"}`, func(r Row) bool { return r.Reachable && r.Activity == "" && r.Claims == nil }},
		{"reachable null", `{"session_id":"s","reachable":null}`, func(r Row) bool { return r.Reachable }},
		{"number as text", `{"session_id":"s","name":42,"task":true}`, func(r Row) bool { return r.Name == "42" && r.Task == "true" }},
		{"bad time", `{"session_id":"s","activity_updated_at":"yesterday","silent_since":7}`,
			func(r Row) bool { return r.ActivityUpdatedAt.IsZero() && r.SilentSince.IsZero() }},
		{"claims as objects", `{"session_id":"s","claims":[{"path":"a.go","mode":"write"},{"x":1},"b"]}`,
			func(r Row) bool { return strings.Join(r.Claims, "|") == `a.go|{"x":1}|b` }},
		{"claim alone", `{"session_id":"s","claims":"a.go"}`, func(r Row) bool { return len(r.Claims) == 1 && r.Claims[0] == "a.go" }},
		{"waiting_on list", `{"session_id":"s","waiting_on":["a","b"]}`, func(r Row) bool { return r.WaitingOn == "a, b" }},
		{"task object in task", `{"session_id":"s","task":{"id":"t9","state":"queued","text":"do it"}}`,
			func(r Row) bool { return r.HarnTask != nil && r.HarnTask.ID == "t9" && r.Task == "do it" }},
		{"terminal task has no buttons", `{"session_id":"s","harn_task":{"id":"t9","state":"terminal"}}`,
			func(r Row) bool { return !r.HasTask() }},
		{"pending_requests not a list", `{"session_id":"s","pending_requests":"r1"}`, func(r Row) bool { return r.PendingRequests == nil }},
		{"requests without id skipped", `{"session_id":"s","pending_requests":[{"kind":"permission"},""]}`,
			func(r Row) bool { return r.PendingRequests == nil }},
		{"bools as text", `{"session_id":"s","ended":"true","reachable":"false"}`, func(r Row) bool { return r.Ended && !r.Reachable }},
		{"unknown fields", `{"session_id":"s","future":{"a":[1,2]}}`, func(r Row) bool { return r.SessionID == "s" }},
		{"events huge", `{"session_id":"s","events":1e300}`, func(r Row) bool { return r.Events == 0 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeRow([]byte(c.json))
			if err != nil {
				t.Fatal(err)
			}
			if !c.ok(r) {
				t.Fatalf("%+v", r)
			}
		})
	}
	for _, bad := range []string{``, `null`, `[]`, `"s"`, `{}`, `{"session_id":""}`, `{"session_id":`} {
		if _, err := DecodeRow([]byte(bad)); !errors.Is(err, ErrBadRow) {
			t.Errorf("%q: %v, want ErrBadRow", bad, err)
		}
	}
}

func TestDecodeRowsSkipsBadEntries(t *testing.T) {
	rows, skipped, err := DecodeRows([]byte("[\n{\"session_id\":\"a\"},\n{\"name\":\"no id\"},\n7,\n{\"session_id\":\"b\"}\n]\n"))
	if err != nil || skipped != 2 || len(rows) != 2 || rows[1].SessionID != "b" {
		t.Fatalf("%v %d %+v", err, skipped, rows)
	}
	if _, _, err := DecodeRows([]byte(`{"session_id":"a"}`)); !errors.Is(err, ErrBadRow) {
		t.Fatalf("object instead of array: %v", err)
	}
}

func TestEvidenceFallsBackToTheNewestAxisTime(t *testing.T) {
	r := Row{ActivityUpdatedAt: t0.Add(-time.Hour), TaskStateUpdatedAt: t0.Add(-time.Minute), LastEventAt: t0.Add(-2 * time.Hour)}
	if !r.Evidence().Equal(t0.Add(-time.Minute)) {
		t.Fatal(r.Evidence())
	}
}

func TestCleanStripsControlCharacters(t *testing.T) {
	r := clean(Row{SessionID: "s\x1b[31m", Task: "a\x07b\u202e", PendingRequests: []Request{{ID: "r\x00", Summary: "x\x9b"}},
		HarnTask: &HarnTask{ID: "t\x1b", PendingCalls: []string{"c\x1b"}}, Claims: []string{"\x1bp"}})
	all := r.SessionID + r.Task + r.PendingRequests[0].ID + r.PendingRequests[0].Summary + r.HarnTask.ID + r.HarnTask.PendingCalls[0] + r.Claims[0]
	for _, c := range all {
		if unicode.IsControl(c) || c == '\u202e' {
			t.Fatalf("control character %U left in %q", c, all)
		}
	}
}

func FuzzDecodeRow(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"s1","activity":"working","claims":["a"],"reachable":false}`,
		`{"session_id":"s","task":{"id":"t","pending_calls":["c"]},"pending_requests":[{"id":"r"},"q"]}`,
		`{"session_id":"s","activity_updated_at":"2026-08-12T10:02:00.000Z","events":"3"}`,
		`[]`, `null`, `{"session_id":1e999}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRow(b)
		if err != nil {
			if !errors.Is(err, ErrBadRow) {
				t.Fatalf("unwrapped error %v", err)
			}
			return
		}
		if r.SessionID == "" {
			t.Fatal("a row without session id decoded")
		}
		c := clean(r)
		s, _ := New(Config{Token: secret, Source: newFake(c), Clock: clock.NewFake(t0)})
		v := s.buildBoard([]Row{c}, Filter{})
		_ = s.buildDetail(c, nil, nil)
		if !r.Ended && v.Shown != 1 {
			t.Fatalf("a live row is not shown: %+v", v)
		}
	})
}
