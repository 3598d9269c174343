package e2e

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// rosterRowJSON is what these tests read of `agents list --json`.
type rosterRowJSON struct {
	SessionID       string `json:"session_id"`
	ParentSessionID string `json:"parent_session_id"`
	Activity        string `json:"activity"`
	TaskState       string `json:"task_state"`
	SilentSince     string `json:"silent_since"`
}

// handleOf is the handle the table shows for id: the first field of the
// line whose handle id starts with.
func handleOf(t *testing.T, table, id string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(strings.TrimLeft(l, "└ "))
		if len(f) > 0 && strings.HasPrefix(id, f[0]) {
			return f[0]
		}
	}
	t.Fatalf("no row for %s in\n%s", id, table)
	return ""
}

// TestRosterSortsByUrgencyWithPasteableHandles: real hook processes make
// a session that waits on a permission, a blocked one, a working one and
// an idle one; `agents list` (table and --json) puts them in that order,
// the table has no escapes when it is not a terminal, its handles are
// unique prefixes that `agents show` accepts, and a subagent is listed
// under its parent.
func TestRosterSortsByUrgencyWithPasteableHandles(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	// The ids share a long prefix: the handles must tell them apart.
	const (
		idle    = "5e55-10n0-aaaa-idle"
		working = "5e55-10n0-bbbb-working"
		blocked = "5e55-10n0-cccc-blocked"
		asking  = "5e55-10n0-dddd-asking"
		child   = "agent-7f3c"
	)
	for _, sid := range []string{idle, working, blocked, asking} {
		e.hook("claude-code", claudeStart(sid, cwd))
	}
	e.hook("claude-code", claudePrompt(working, cwd))
	e.hook("claude-code", claudePrompt(asking, cwd))
	e.hook("claude-code", claudePermission(asking, cwd))
	e.ok("agents", "lifecycle", "blocked", "--session", blocked, "--reason", "waiting for repository access")
	e.hook("claude-code", claudeSubStart(working, cwd, child))

	var rows []rosterRowJSON
	mustJSON(t, e.ok("agents", "list", "--json"), &rows)
	var got []string
	for _, r := range rows {
		if r.ParentSessionID == "" {
			got = append(got, r.SessionID)
		}
	}
	if !reflect.DeepEqual(got, []string{asking, blocked, working, idle}) {
		t.Errorf("--json order %v", got)
	}

	r := e.harn("", "agents", "list")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	table := r.stdout
	if strings.ContainsAny(table, "\x1b\x07\r") {
		t.Errorf("the table has escapes though stdout is not a terminal: %q", table)
	}
	lines := strings.Split(strings.TrimSpace(table), "\n")
	var order []string
	for _, l := range lines[1:] {
		order = append(order, strings.Fields(l)[0])
	}
	seen := map[string]bool{}
	for _, sid := range []string{asking, blocked, working, idle} {
		h := handleOf(t, table, sid)
		if len(h) < 6 || seen[h] {
			t.Errorf("handle %q of %s is short or repeated", h, sid)
		}
		seen[h] = true
		var s sessionJSON
		mustJSON(t, e.ok("agents", "show", h, "--json"), &s)
		if s.SessionID != sid {
			t.Errorf("show %s gave %s, want %s", h, s.SessionID, sid)
		}
	}
	if !strings.HasPrefix(order[0], asking[:6]) || !strings.Contains(lines[1], "needs_input") {
		t.Errorf("the first row is not the one that needs input:\n%s", table)
	}
	// The subagent's row is right under its parent, indented.
	for i, l := range lines {
		if strings.HasPrefix(l, handleOf(t, table, working)) {
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "└ ") {
				t.Errorf("the subagent is not listed under its parent:\n%s", table)
			}
		}
	}
	if strings.Contains(table, "Agent ") {
		t.Errorf("the NAME column repeats \"Agent \":\n%s", table)
	}
	for _, l := range lines {
		if len([]rune(l)) > 120 {
			t.Errorf("line wider than 120 columns: %q", l)
		}
	}
}

// TestWorkingSessionWithoutEvidenceShowsSilent: an Esc interrupt fires no
// hook; the session stays working, and after --silence-after without
// evidence the roster says `working · silent` and --json has
// silent_since. The activity itself never changes.
func TestWorkingSessionWithoutEvidenceShowsSilent(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	const sid = "e5c-1n7e-rrup-7000"
	e.hook("claude-code", claudeStart(sid, cwd))
	e.hook("claude-code", claudePrompt(sid, cwd))
	e.hook("claude-code", claudePreBash(sid, cwd, "esc01"))
	eventually(t, stateTimeout, "the session shows silent", func() (bool, string) {
		r := e.harn("", "agents", "list", "--silence-after", "1s")
		return strings.Contains(r.stdout, "working · silent"), r.stdout
	})
	var rows []rosterRowJSON
	mustJSON(t, e.ok("agents", "list", "--json", "--silence-after", "1s"), &rows)
	if len(rows) != 1 || rows[0].Activity != "working" || rows[0].SilentSince == "" {
		t.Errorf("--json: %+v", rows)
	}
	if _, err := time.Parse(time.RFC3339Nano, rows[0].SilentSince); err != nil || !strings.HasSuffix(rows[0].SilentSince, "Z") {
		t.Errorf("silent_since %q is not RFC 3339 UTC", rows[0].SilentSince)
	}
	var shown rosterRowJSON
	mustJSON(t, e.ok("agents", "show", sid, "--json", "--silence-after", "1s"), &shown)
	if shown.SilentSince == "" || shown.Activity != "working" {
		t.Errorf("show --json: %+v", shown)
	}
	if out := e.ok("agents", "show", sid, "--silence-after", "1s"); !strings.Contains(out, "silent") {
		t.Errorf("show does not say silent:\n%s", out)
	}
	// With the default (5m) it is just working.
	if out := e.ok("agents", "list"); strings.Contains(out, "silent") {
		t.Errorf("silent before --silence-after:\n%s", out)
	}
}

// TestTraceJSONLFoldsToShow: `trace --jsonl` prints canonical events that
// `agents fold` reads back into the state the node shows.
func TestTraceJSONLFoldsToShow(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	const sid = "7race-j5on-l000"
	for _, s := range claudeSteps(sid, cwd)[:4] {
		e.hook("claude-code", s.payload())
	}
	e.ok("agents", "set-task", "--session", sid, "fix the checkout rounding")
	e.ok("agents", "lifecycle", "blocked", "--session", sid, "--reason", "waiting for access")
	jsonl := e.ok("agents", "trace", sid, "--jsonl")
	for _, l := range strings.Split(strings.TrimSpace(jsonl), "\n") {
		if !json.Valid([]byte(l)) {
			t.Fatalf("not one JSON object a line: %q", l)
		}
	}
	r := e.harn(jsonl, "agents", "fold")
	if r.code != 0 {
		t.Fatalf("fold: %v", r)
	}
	var got, want map[string]any
	mustJSON(t, r.stdout, &got)
	mustJSON(t, e.ok("agents", "status", sid, "--json"), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fold of trace --jsonl differs from the node\nfold: %v\nnode: %v", got, want)
	}
	if r := e.harn("", "agents", "trace", sid, "--json", "--jsonl"); r.code != 2 {
		t.Errorf("--json with --jsonl: %v", r)
	}
}

// TestStatusAndShowConsistent: --consistent reads the registry's record
// through the leader, by id, unique prefix or name.
func TestStatusAndShowConsistent(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	const sid = "c0n5-1573-n7aa"
	e.hook("claude-code", claudeStart(sid, cwd))
	e.ok("agents", "set-task", "--session", sid, "fix the rounding")
	e.ok("agents", "lifecycle", "blocked", "--session", sid, "--reason", "waiting for access")
	var st map[string]any
	mustJSON(t, e.ok("agents", "status", sid[:8], "--consistent", "--json"), &st)
	if st["session_id"] != sid || st["task_state"] != "blocked" || st["blocker_reason"] != "waiting for access" {
		t.Errorf("status --consistent: %v", st)
	}
	var show sessionJSON
	mustJSON(t, e.ok("agents", "show", sid, "--consistent", "--json"), &show)
	if show.SessionID != sid || show.TaskState != "blocked" {
		t.Errorf("show --consistent: %+v", show)
	}
	if show.Name != "" {
		mustJSON(t, e.ok("agents", "show", show.Name, "--consistent", "--json"), &show)
		if show.SessionID != sid {
			t.Errorf("show --consistent by name %q gave %s", show.Name, show.SessionID)
		}
	}
	// --consistent keeps the project, as list and show do without it; the
	// filters apply the same to the table and --json.
	project := filepath.Base(cwd)
	var cons map[string]any
	mustJSON(t, e.ok("agents", "show", sid, "--consistent", "--json"), &cons)
	if cons["project"] != project {
		t.Errorf("show --consistent lost the project: %v", cons["project"])
	}
	if out := e.ok("agents", "list", "--consistent"); !strings.Contains(out, project) {
		t.Errorf("list --consistent lost the project:\n%s", out)
	}
	var rows []map[string]any
	mustJSON(t, e.ok("agents", "list", "--json", "--project", project, "--activity", "idle,working,unknown,needs_input"), &rows)
	if len(rows) != 1 || rows[0]["session_id"] != sid {
		t.Errorf("list --project %s --json: %v", project, rows)
	}
	mustJSON(t, e.ok("agents", "list", "--json", "--node", "no-such-node"), &rows)
	if out := e.ok("agents", "list", "--node", "no-such-node"); len(rows) != 0 || strings.Contains(out, sid[:6]) {
		t.Errorf("list --node no-such-node: %v\n%s", rows, out)
	}
	if r := e.harn("", "agents", "status", "no-such-session", "--consistent"); r.code != 3 {
		t.Errorf("unknown session: %v", r)
	}
	out := e.ok("agents", "show", sid)
	if !regexp.MustCompile(`since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \((just now|\d+s ago)\)`).MatchString(out) {
		t.Errorf("show does not print local times with ages:\n%s", out)
	}
}

// TestLifecyclePendingRegistryWriteExitsWithOwnCode: in a mesh of two
// servers that lost one (no quorum), a lifecycle change is recorded in
// the ledger, waits at most --timeout for the registry, and exits 9 with
// one short line.
func TestLifecyclePendingRegistryWriteExitsWithOwnCode(t *testing.T) {
	nodes := startServers(t, 2)
	a, b := nodes[0], nodes[1]
	cwd := t.TempDir()
	const sid = "pend-1ng0-w71e"
	a.hook("claude-code", claudeStart(sid, cwd))
	b.kill9()
	start := time.Now()
	r := a.harn("", "agents", "lifecycle", "blocked", "--session", sid, "--reason", "no quorum", "--timeout", "1s")
	took := time.Since(start)
	if r.code != 11 {
		t.Fatalf("want exit 11 (registry write pending): %v", r)
	}
	oneLineErr(t, r)
	if !strings.Contains(r.stderr, "pending") {
		t.Errorf("the line does not say the write is pending: %q", r.stderr)
	}
	if took > cmdTimeout/2 {
		t.Errorf("the change took %v with --timeout 1s", took)
	}
	if st := a.status(sid); st.TaskState != "blocked" {
		t.Errorf("the change was not kept in the ledger: %+v", st)
	}
	if r := a.harn("", "agents", "lifecycle", "active", "--session", sid, "--timeout", "0s"); r.code != 2 {
		t.Errorf("--timeout 0s: %v", r)
	}
}

// TestHostileTextNeverReachesTheTerminal: escapes in what an agent sends
// (session id, cwd, task, tool, the block reason) never reach the human
// output of list, show, status, trace or whoami.
func TestHostileTextNeverReachesTheTerminal(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	const evil = `\u001b]0;pwned\u0007\u001b[2J\r`
	const sid = "ev1l-5e55-" + evil
	cwd := "/home/ana/sh" + evil + "op"
	common := `"session_id":"` + sid + `","transcript_path":"/tmp/x.jsonl","cwd":"` + cwd + `"`
	e.hook("claude-code", `{`+common+`,"hook_event_name":"SessionStart","source":"startup"}`)
	e.hook("claude-code", `{`+common+`,"hook_event_name":"UserPromptSubmit","prompt":"go"}`)
	e.hook("claude-code", `{`+common+`,"hook_event_name":"PermissionRequest","tool_name":"Ba`+evil+`sh","tool_input":{"command":"x"}}`)
	e.ok("agents", "set-task", "--session", "ev1l-5e55", "fix "+"\x1b[31mred\x07\r")
	e.ok("agents", "lifecycle", "blocked", "--session", "ev1l-5e55", "--reason", "why\x1b]0;t\x07\r")
	if js := e.ok("agents", "show", "ev1l-5e55", "--json"); strings.Count(js, `\u001b`) < 3 {
		t.Fatalf("the hostile text did not get in, so this test proves nothing: %s", js)
	}
	for _, args := range [][]string{
		{"agents", "list"}, {"agents", "show", "ev1l-5e55"}, {"agents", "status", "ev1l-5e55"},
		{"agents", "trace", "ev1l-5e55"}, {"agents", "whoami", "--session", "ev1l-5e55"},
		{"agents", "show", "ev1l-5e55", "--consistent"},
	} {
		r := e.harn("", args...)
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		if strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07\r") {
			t.Errorf("harn %s printed an escape: %q", strings.Join(args, " "), r.stdout+r.stderr)
		}
	}
}
