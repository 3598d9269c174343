package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/presence"
)

// now is the fixed reading time of these tests.
var now = time.Date(2026, 8, 12, 10, 30, 0, 0, time.UTC)

func ago(d time.Duration) string { return presence.FormatTime(now.Add(-d)) }

// entry is a roster entry as the node writes it, from field pairs.
func entry(kv ...string) []byte {
	m := map[string]any{"activity": "idle", "task_state": "active", "ended": false, "reachable": true, "node": "buildbox"}
	for i := 0; i+1 < len(kv); i += 2 {
		switch kv[i+1] {
		case "true":
			m[kv[i]] = true
		case "false":
			m[kv[i]] = false
		default:
			m[kv[i]] = kv[i+1]
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func roster(t *testing.T, full bool, entries ...[]byte) []*rosterRow {
	t.Helper()
	rows, err := decodeJSONRoster(entries, full, now, defaultSilenceAfter)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func rowIDs(rows []*rosterRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.SessionId)
	}
	return out
}

func table(t *testing.T, colour bool, entries ...[]byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := renderRoster(&b, roster(t, true, entries...), now, colour, tableWidth); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// line is the table line whose text contains s.
func line(t *testing.T, out, s string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line with %q in\n%s", s, out)
	return ""
}

var urgencyFixture = [][]byte{
	entry("session_id", "idle-aaaaaa", "activity", "idle", "activity_updated_at", ago(time.Hour)),
	entry("session_id", "work-aaaaaa", "activity", "working", "activity_updated_at", ago(time.Minute), "last_event_at", ago(time.Minute)),
	entry("session_id", "ask-new-aaa", "activity", "needs_input", "activity_updated_at", ago(time.Minute)),
	entry("session_id", "unknown-aaa", "activity", "unknown"),
	entry("session_id", "blocked-aaa", "activity", "idle", "task_state", "blocked", "blocker_reason", "repo access",
		"activity_updated_at", ago(time.Minute), "task_state_updated_at", ago(2*time.Hour)),
	entry("session_id", "ask-old-aaa", "activity", "needs_input", "activity_updated_at", ago(9*time.Minute)),
}

var urgencyOrder = []string{"ask-old-aaa", "ask-new-aaa", "blocked-aaa", "work-aaaaaa", "idle-aaaaaa", "unknown-aaa"}

func TestListSortsByUrgencyInTableAndJSON(t *testing.T) {
	if got := rowIDs(roster(t, true, urgencyFixture...)); !slices.Equal(got, urgencyOrder) {
		t.Errorf("table rows %v, want %v", got, urgencyOrder)
	}
	rows := roster(t, false, urgencyFixture...)
	var b bytes.Buffer
	if err := writeRosterJSON(&b, rows); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("--json is not JSON: %v\n%s", err, b.String())
	}
	var gotIDs []string
	for _, g := range got {
		gotIDs = append(gotIDs, g["session_id"].(string))
	}
	if !slices.Equal(gotIDs, urgencyOrder) {
		t.Errorf("--json rows %v, want %v", gotIDs, urgencyOrder)
	}
	out := table(t, false, urgencyFixture...)
	var order []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		order = append(order, strings.Fields(l)[0])
	}
	want := []string{"ask-ol", "ask-ne", "blocke", "work-a", "idle-a", "unknow"}
	if !slices.Equal(order, want) {
		t.Errorf("table handles %v, want %v\n%s", order, want, out)
	}
}

func TestEmptyRosterJSONIsEmptyArray(t *testing.T) {
	var b bytes.Buffer
	if err := writeRosterJSON(&b, nil); err != nil {
		t.Fatal(err)
	}
	var got []any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || len(got) != 0 {
		t.Errorf("empty roster --json is %q (%v)", b.String(), err)
	}
}

func TestStateColourOnlyWhenAsked(t *testing.T) {
	out := table(t, true, urgencyFixture...)
	if l := line(t, out, "ask-ol"); !strings.Contains(l, sgrAmber+"needs_input"+sgrReset) {
		t.Errorf("needs_input is not amber: %q", l)
	}
	if l := line(t, out, "blocke"); !strings.Contains(l, sgrAmber+"blocked"+sgrReset) {
		t.Errorf("blocked is not amber: %q", l)
	}
	done := table(t, true, entry("session_id", "done-aaaaaa", "task_state", "done"))
	if !strings.Contains(done, sgrGreen+"done"+sgrReset) {
		t.Errorf("done is not green: %q", done)
	}
	// Colour wraps the word only: the columns line up as without colour.
	plain := table(t, false, urgencyFixture...)
	if strip := stripSGR(out); strip != plain {
		t.Errorf("coloured table differs from the plain one beyond its escapes:\n%s\n%s", strip, plain)
	}
	if strings.Contains(plain, "\x1b") {
		t.Errorf("plain table has escapes: %q", plain)
	}
}

func stripSGR(s string) string {
	for _, c := range []string{sgrAmber, sgrGreen, sgrCyan, sgrDim, sgrReset} {
		s = strings.ReplaceAll(s, c, "")
	}
	return s
}

func TestNoColourWhenNotATTYOrNoColorSet(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	if useColour(&bytes.Buffer{}) {
		t.Error("a buffer (not a TTY) gets colour")
	}
	t.Setenv("NO_COLOR", "1")
	if useColour(&bytes.Buffer{}) {
		t.Error("NO_COLOR set, yet colour")
	}
}

func TestNeedsInputRowShowsWaitingOnAndHowLong(t *testing.T) {
	out := table(t, false,
		entry("session_id", "ask-edit-aa", "activity", "needs_input", "activity_updated_at", ago(4*time.Minute),
			"waiting_on", "Edit src/app.go"),
		entry("session_id", "ask-bare-aa", "activity", "needs_input", "activity_updated_at", ago(90*time.Second)),
		entry("session_id", "parent-aaaa", "activity", "needs_input", "activity_updated_at", ago(2*time.Minute),
			"waiting_on", "subagent Flint: Bash", "waiting_child", "child-1"))
	if l := line(t, out, "ask-ed"); !strings.Contains(l, "needs_input 4m: Edit src/app.go") {
		t.Errorf("row does not say what it waits on and for how long: %q", l)
	}
	if l := line(t, out, "ask-ba"); !strings.Contains(l, "needs_input 1m") {
		t.Errorf("row without waiting_on: %q", l)
	}
	if l := line(t, out, "parent"); !strings.Contains(l, "needs_input 2m: subagent Flint: Bash") {
		t.Errorf("parent surfacing a child: %q", l)
	}
}

func TestProjectColumnShowsRepoAndBranch(t *testing.T) {
	out := table(t, false,
		entry("session_id", "proj-branch", "project", "shop", "branch", "fix/rounding", "cwd", "/home/ana/shop/sub"),
		entry("session_id", "proj-cwdonly", "cwd", "/home/ana/billing/"),
		entry("session_id", "proj-none00"))
	if l := line(t, out, "proj-b"); !strings.Contains(l, "shop@fix/rounding") {
		t.Errorf("project@branch missing: %q", l)
	}
	if l := line(t, out, "proj-c"); !strings.Contains(l, " billing ") {
		t.Errorf("cwd basename missing: %q", l)
	}
	if !strings.Contains(line(t, out, "SESSION"), "PROJECT") {
		t.Errorf("no PROJECT column:\n%s", out)
	}
}

func TestNameColumnDropsAgentPrefix(t *testing.T) {
	out := table(t, false, entry("session_id", "named-aaaaa", "name", "Flint"))
	l := line(t, out, "named")
	if strings.Contains(l, "Agent ") || !strings.Contains(l, "Flint") {
		t.Errorf("name cell: %q", l)
	}
}

func TestShortIDIsShortestUniquePrefixOfSix(t *testing.T) {
	cases := []struct{ ids, want []string }{
		{[]string{"8a1f0c2e-5b7d", "8a1f0c99-0000", "ffffffff"}, []string{"8a1f0c2", "8a1f0c9", "ffffff"}},
		{[]string{"abc"}, []string{"abc"}},
		{[]string{"abcdefgh", "abcdefgh"}, []string{"abcdef", "abcdef"}},
		{[]string{"abcdef", "abcdefg"}, []string{"abcdef", "abcdefg"}},
		{[]string{"ééééé-x", "ééééé-y"}, []string{"ééééé-x", "ééééé-y"}},
	}
	for _, c := range cases {
		if got := shortIDs(c.ids); !slices.Equal(got, c.want) {
			t.Errorf("shortIDs(%q) = %q, want %q", c.ids, got, c.want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		idv := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-c]{0,9}`), 0, 12, rapid.ID[string]).Draw(t, "ids")
		got := shortIDs(idv)
		for i, h := range got {
			if !strings.HasPrefix(idv[i], h) || (len(h) < minHandle && h != idv[i]) {
				t.Fatalf("%q: handle %q", idv[i], h)
			}
			for j, o := range idv {
				// A handle names its id: no other id starts with it,
				// unless the handle is the whole id (then it is exact).
				if j != i && strings.HasPrefix(o, h) && h != idv[i] {
					t.Fatalf("handle %q of %q is also a prefix of %q", h, idv[i], o)
				}
			}
			if len(h) > minHandle && h != idv[i] {
				shorter := h[:len(h)-1]
				unique := true
				for j, o := range idv {
					if j != i && strings.HasPrefix(o, shorter) {
						unique = false
					}
				}
				if unique {
					t.Fatalf("handle %q of %q is not the shortest", h, idv[i])
				}
			}
		}
	})
}

func TestTableFits120ColumnsCutsTaskNeverState(t *testing.T) {
	long := strings.Repeat("refactor the checkout flow ", 8)
	out := table(t, false,
		entry("session_id", "8a1f0c2e-5b7d-4e21-9c3a-0d6e2f4b1a77", "name", "Bartholomew", "agent", "claude-code",
			"activity", "needs_input", "activity_updated_at", ago(3*time.Minute), "waiting_on", "Edit src/a/very/long/path/to/app.go",
			"task", long, "project", "a-rather-long-repository-name", "branch", "feature/a-long-branch", "node", "buildbox-eu-west"),
		entry("session_id", "9b2e", "task_state", "blocked", "blocker_reason", strings.Repeat("why ", 30),
			"task", long, "task_state_updated_at", ago(time.Hour)),
		entry("session_id", "silent-aaaa", "activity", "working", "last_evidence_at", ago(7*time.Minute), "task", long))
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > tableWidth {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	if !strings.Contains(out, "needs_input 3m") || !strings.Contains(out, "blocked") || !strings.Contains(out, "working · silent 7m") {
		t.Errorf("a state was cut:\n%s", out)
	}
	for _, word := range []string{"needs_input 3m", "blocked", "working · silent 7m", "TASK STATE", "ACTIVITY"} {
		r := []rune(word)
		for i := 1; i < len(r); i++ {
			if strings.Contains(out, string(r[:i])+"…") {
				t.Errorf("%q was cut to %q:\n%s", word, string(r[:i])+"…", out)
			}
		}
	}
	if !strings.Contains(line(t, out, "8a1f0c"), "…") {
		t.Errorf("the task was not cut:\n%s", out)
	}
}

func TestChildrenListedUnderTheirParent(t *testing.T) {
	rows := roster(t, true,
		entry("session_id", "parent-aaaa", "activity", "idle", "activity_updated_at", ago(time.Minute)),
		entry("session_id", "child-b-aaa", "parent_session_id", "parent-aaaa", "activity", "working", "activity_updated_at", ago(time.Minute)),
		entry("session_id", "child-a-aaa", "parent_session_id", "parent-aaaa", "activity", "needs_input", "activity_updated_at", ago(time.Minute)),
		entry("session_id", "grandchild1", "parent_session_id", "child-b-aaa", "activity", "idle"),
		entry("session_id", "orphan-aaaa", "parent_session_id", "gone-parent", "activity", "working", "activity_updated_at", ago(time.Minute)),
		entry("session_id", "other-aaaaa", "activity", "working", "activity_updated_at", ago(2*time.Minute)),
		entry("session_id", "cycle-a-aaa", "parent_session_id", "cycle-b-aaa", "activity", "idle"),
		entry("session_id", "cycle-b-aaa", "parent_session_id", "cycle-a-aaa", "activity", "idle"))
	var got []string
	for _, p := range treeOrder(rows) {
		got = append(got, fmt.Sprintf("%d:%s", p.depth, rows[p.row].SessionId))
	}
	want := []string{"0:other-aaaaa", "0:orphan-aaaa", "0:parent-aaaa", "1:child-a-aaa", "1:child-b-aaa",
		"2:grandchild1", "0:cycle-a-aaa", "1:cycle-b-aaa"}
	if !slices.Equal(got, want) {
		t.Errorf("order\n got %v\nwant %v", got, want)
	}
	var b bytes.Buffer
	if err := renderRoster(&b, rows, now, false, tableWidth); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if l := line(t, out, "child-a"); !strings.HasPrefix(l, "└ child-a") {
		t.Errorf("child not indented: %q", l)
	}
	if l := line(t, out, "grandc"); !strings.HasPrefix(l, "  └ grandc") {
		t.Errorf("grandchild not indented: %q", l)
	}
	if l := line(t, out, "orphan"); !strings.HasPrefix(l, "orphan") {
		t.Errorf("orphan not at top level: %q", l)
	}
}

func TestWorkingSilentShowsSilentAge(t *testing.T) {
	out := table(t, false,
		entry("session_id", "node-says-a", "activity", "working", "silent_since", ago(7*time.Minute), "last_evidence_at", ago(7*time.Minute)),
		entry("session_id", "cli-finds-a", "activity", "working", "last_evidence_at", ago(8*time.Minute)),
		entry("session_id", "old-node-aa", "activity", "working", "last_event_at", ago(6*time.Minute)),
		entry("session_id", "recent-aaaa", "activity", "working", "last_evidence_at", ago(4*time.Minute)),
		entry("session_id", "idle-quiet-", "activity", "idle", "last_evidence_at", ago(time.Hour)))
	for id, want := range map[string]string{"node-s": "working · silent 7m", "cli-fi": "working · silent 8m", "old-no": "working · silent 6m"} {
		if l := line(t, out, id); !strings.Contains(l, want) {
			t.Errorf("%s: want %q in %q", id, want, l)
		}
	}
	for _, id := range []string{"recent", "idle-q"} {
		if l := line(t, out, id); strings.Contains(l, "silent") {
			t.Errorf("%s is not silent: %q", id, l)
		}
	}
}

func TestSilentSinceAddedToJSONOnlyWhenAbsent(t *testing.T) {
	rows := roster(t, false,
		entry("session_id", "cli-finds-a", "activity", "working", "last_evidence_at", ago(8*time.Minute)),
		entry("session_id", "node-says-a", "activity", "working", "silent_since", ago(9*time.Minute)),
		entry("session_id", "recent-aaaa", "activity", "working", "last_evidence_at", ago(time.Minute)))
	var b bytes.Buffer
	if err := writeRosterJSON(&b, rows); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	byID := map[string]map[string]any{}
	for _, g := range got {
		byID[g["session_id"].(string)] = g
	}
	if v := byID["cli-finds-a"]["silent_since"]; v != ago(8*time.Minute) {
		t.Errorf("computed silent_since %v, want %s", v, ago(8*time.Minute))
	}
	if v := byID["node-says-a"]["silent_since"]; v != ago(9*time.Minute) {
		t.Errorf("node's silent_since changed to %v", v)
	}
	if _, ok := byID["recent-aaaa"]["silent_since"]; ok {
		t.Error("a recent session is silent")
	}
	if bytes.Count(b.Bytes(), []byte(`"silent_since"`)) != 2 {
		t.Errorf("silent_since written twice for one row:\n%s", b.String())
	}
}

func TestHumanTimesAreLocalToTheSecond(t *testing.T) {
	loc := time.FixedZone("CEST", 2*3600)
	r, err := decodeRosterRow(entry("session_id", "s-1", "activity", "needs_input",
		"activity_updated_at", presence.FormatTime(now.Add(-3*time.Minute-250*time.Millisecond)),
		"task_state_updated_at", ago(time.Hour)), true)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := (detailView{now: now, loc: loc}).write(&b, &r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "2026-08-12 12:26:59 (3m ago)") || !strings.Contains(out, "2026-08-12 11:30:00 (1h ago)") {
		t.Errorf("times are not local to the second with their age:\n%s", out)
	}
	if strings.Contains(out, "T10:") || strings.Contains(out, "Z") {
		t.Errorf("human output shows RFC 3339:\n%s", out)
	}
}

// hostile is text with the escapes a hostile agent or peer could send.
const hostile = "a\x1b[2J\x1b]0;pwned\x07\rb\x9b31m\u202ec\nd"

func TestNoEscapeReachesHumanOutput(t *testing.T) {
	fields := []string{"session_id", "parent_session_id", "name", "session_name", "agent", "node", "activity_source",
		"blocker_reason", "task", "cwd", "waiting_on", "project", "branch", "waiting_child", "end_reason"}
	kv := []string{"activity", "needs_input", "task_state", "blocked", "activity_updated_at", ago(time.Minute), "reachable", "false"}
	for _, f := range fields {
		kv = append(kv, f, f+hostile)
	}
	b := entry(kv...)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["claims"] = []string{"/x" + hostile}
	b, _ = json.Marshal(m)
	child := entry("session_id", "kid"+hostile, "parent_session_id", "session_id"+hostile, "activity", "working",
		"last_evidence_at", ago(time.Hour))
	check := func(what, out string) {
		t.Helper()
		for _, bad := range []string{"\x1b", "\x07", "\r", "\u009b", "\u202e"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: %q reached the output:\n%q", what, bad, out)
			}
		}
		if !strings.Contains(out, "pwned") && what != "trace" {
			t.Errorf("%s: the text itself was dropped:\n%q", what, out)
		}
	}
	check("table", table(t, false, b, child))
	check("coloured table", stripSGR(table(t, true, b, child)))
	r, err := decodeRosterRow(b, true)
	if err != nil {
		t.Fatal(err)
	}
	var d bytes.Buffer
	if err := (detailView{now: now, loc: time.UTC, full: true}).write(&d, &r); err != nil {
		t.Fatal(err)
	}
	check("show", d.String())
	var tr bytes.Buffer
	ev := presence.Event{ID: "e" + hostile, SessionID: "s", Type: "tool.pre_use" + hostile, TS: now,
		Attrs: map[string]any{"tool": hostile}}
	if err := writeTrace(&tr, []presence.Event{ev}, time.UTC); err != nil {
		t.Fatal(err)
	}
	check("trace", tr.String())
}

// TestLargeRosterSortsLikeCompareUrgency: a large roster comes out in
// presence.CompareUrgency order, every row once; a bad entry anywhere
// fails the read.
func TestLargeRosterSortsLikeCompareUrgency(t *testing.T) {
	acts := []string{"working", "idle", "needs_input", "unknown"}
	var entries [][]byte
	var keys []presence.UrgencyKey
	for i := 0; i < 6000; i++ {
		id := fmt.Sprintf("s-%05d", (i*7919)%(6000))
		act := acts[i%len(acts)]
		ts := "blocked"
		if i%5 != 0 {
			ts = "active"
		}
		at := now.Add(-time.Duration(i%97) * time.Second)
		entries = append(entries, entry("session_id", id, "activity", act, "task_state", ts,
			"activity_updated_at", presence.FormatTime(at), "task_state_updated_at", presence.FormatTime(at.Add(-time.Hour))))
		keys = append(keys, presence.UrgencyKey{SessionID: id, Activity: presence.Activity(act), TaskState: presence.TaskState(ts),
			ActivityUpdatedAt: at, TaskStateUpdatedAt: at.Add(-time.Hour)})
	}
	slices.SortFunc(keys, presence.CompareUrgency)
	rows := roster(t, false, entries...)
	if len(rows) != len(keys) {
		t.Fatalf("%d rows, want %d", len(rows), len(keys))
	}
	for i := range keys {
		if rows[i].SessionId != keys[i].SessionID {
			t.Fatalf("row %d is %s, want %s", i, rows[i].SessionId, keys[i].SessionID)
		}
	}
	entries[len(entries)/2] = []byte(`{"session_id":`)
	if _, err := decodeJSONRoster(entries, false, now, defaultSilenceAfter); err == nil {
		t.Error("a malformed entry was accepted")
	}
}
