package cli

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/spf13/cobra"
)

// TestEndedSessionShowsEndedInTaskState: an ended session's TASK STATE
// cell says ended, not the task state it had.
func TestEndedSessionShowsEndedInTaskState(t *testing.T) {
	out := table(t, false, entry("session_id", "gone-aaaaaa", "ended", "true", "task_state", "active"))
	l := line(t, out, "gone-a")
	if strings.Contains(l, "active") || strings.Count(l, "ended") != 2 {
		t.Errorf("ended row %q: want ended in ACTIVITY and TASK STATE", l)
	}
}

// TestShowCarriesTheHarnTask: human `agents show` shows the session's
// harn task, as the table and --json do.
func TestShowCarriesTheHarnTask(t *testing.T) {
	b := []byte(`{"session_id":"s-1","activity":"working","task_state":"active",` +
		`"harn_task":{"id":"t-01J9ZK3F9Q2","state":"running","text":"fix the build","queue_depth":2}}`)
	r, err := decodeRosterRow(b, true)
	if err != nil {
		t.Fatal(err)
	}
	var d bytes.Buffer
	if err := (detailView{now: now, loc: time.UTC, full: true}).write(&d, &r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.String(), "harn task:") || !strings.Contains(d.String(), "running (2 queued): fix the build") {
		t.Errorf("show lacks the harn task:\n%s", d.String())
	}
}

// TestProjectIsTheSameInListAndShow: PROJECT in the table and project in
// show come from the row's one project, also when only the cwd says it.
func TestProjectIsTheSameInListAndShow(t *testing.T) {
	for _, e := range [][]byte{
		entry("session_id", "s-proj-aaaa", "project", "shop", "branch", "main"),
		entry("session_id", "s-proj-aaaa", "cwd", "/home/ana/shop", "branch", "main"),
	} {
		out := table(t, false, e)
		r, err := decodeRosterRow(e, true)
		if err != nil {
			t.Fatal(err)
		}
		var d bytes.Buffer
		if err := (detailView{now: now, loc: time.UTC}).write(&d, &r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line(t, out, "s-proj"), "shop@main") || !strings.Contains(d.String(), "project:    shop@main") {
			t.Errorf("list and show disagree on the project:\n%s\n%s", out, d.String())
		}
	}
}

func filterCmd(t *testing.T, args ...string) listFilter {
	t.Helper()
	c := &cobra.Command{}
	addListFilterFlags(c)
	if err := c.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	f, err := listFilterOf(c)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestListFiltersCompose: --node, --activity, --project and --agent each
// narrow the rows, together they all apply, and the table and --json
// list the same rows.
func TestListFiltersCompose(t *testing.T) {
	rows := func() []*rosterRow {
		return roster(t, true,
			entry("session_id", "a-work-aaaa", "node", "nodeA", "agent", "claude-code", "activity", "working", "project", "shop", "last_evidence_at", ago(time.Minute)),
			entry("session_id", "a-ask-aaaaa", "node", "nodeA", "agent", "codex", "activity", "needs_input", "project", "shop"),
			entry("session_id", "b-ask-aaaaa", "node", "nodeB", "agent", "claude-code", "activity", "needs_input", "cwd", "/src/web", "branch", "dev"),
			entry("session_id", "b-gone-aaaa", "node", "nodeB", "agent", "claude-code", "ended", "true", "project", "web"))
	}
	ids := func(rs []*rosterRow) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.SessionId)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"a-ask-aaaaa", "a-work-aaaa", "b-ask-aaaaa", "b-gone-aaaa"}},
		{[]string{"--node", "nodeA"}, []string{"a-ask-aaaaa", "a-work-aaaa"}},
		{[]string{"--activity", "needs_input"}, []string{"a-ask-aaaaa", "b-ask-aaaaa"}},
		{[]string{"--activity", "ended"}, []string{"b-gone-aaaa"}},
		{[]string{"--project", "web"}, []string{"b-ask-aaaaa", "b-gone-aaaa"}},
		{[]string{"--project", "web@dev"}, []string{"b-ask-aaaaa"}},
		{[]string{"--agent", "claude-code", "--activity", "needs_input"}, []string{"b-ask-aaaaa"}},
		{[]string{"--node", "nodeA,nodeB", "--agent", "codex"}, []string{"a-ask-aaaaa"}},
		{[]string{"--node", "nodeA", "--project", "web"}, nil},
	} {
		got := filterCmd(t, c.args...).apply(rows())
		if !slices.Equal(ids(got), c.want) {
			t.Errorf("%v: rows %v, want %v", c.args, ids(got), c.want)
		}
		var j bytes.Buffer
		if err := writeRosterJSON(&j, got); err != nil {
			t.Fatal(err)
		}
		var list []map[string]any
		if err := json.Unmarshal(j.Bytes(), &list); err != nil || len(list) != len(c.want) {
			t.Errorf("%v: --json lists %d rows, want %d (%v)", c.args, len(list), len(c.want), err)
		}
		var h bytes.Buffer
		if err := renderRoster(&h, got, now, false, tableWidth); err != nil {
			t.Fatal(err)
		}
		if n := len(strings.Split(strings.TrimSpace(h.String()), "\n")) - 1; len(c.want) > 0 && n != len(c.want) {
			t.Errorf("%v: the table lists %d rows, want %d", c.args, n, len(c.want))
		}
	}
	c := &cobra.Command{}
	addListFilterFlags(c)
	_ = c.Flags().Parse([]string{"--activity", "busy"})
	if _, err := listFilterOf(c); err == nil || hook.ExitCode(err) != hook.ExitUsage {
		t.Errorf("an unknown activity: %v, want a usage error", err)
	}
}

// TestTableFitsTheGivenWidth: the table is cut to the width it is given
// (the terminal's), and --wide cuts nothing.
func TestTableFitsTheGivenWidth(t *testing.T) {
	long := strings.Repeat("a long task that goes on ", 12)
	rows := roster(t, true, entry("session_id", "s-wide-aaaa", "task", long, "node", "nodeC", "reachable", "false"))
	for _, width := range []int{120, 250} {
		var b bytes.Buffer
		if err := renderRoster(&b, rows, now, false, width); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			if n := len([]rune(l)); n > width {
				t.Errorf("width %d: a line of %d runes", width, n)
			}
		}
		if width == 250 && !strings.Contains(b.String(), "nodeC (unreachable)") {
			t.Errorf("at 250 columns the unreachable marker is cut:\n%s", b.String())
		}
	}
	var b bytes.Buffer
	if err := renderRoster(&b, rows, now, false, wideTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), strings.TrimSpace(long)) {
		t.Errorf("--wide cut the task:\n%s", b.String())
	}
	c := &cobra.Command{}
	addListFilterFlags(c)
	_ = c.Flags().Parse([]string{"--wide"})
	if tableWidthOf(c) != wideTable {
		t.Error("--wide does not lift the width")
	}
	t.Setenv("COLUMNS", "200")
	if w := tableWidthOf(&cobra.Command{}); w != 200 {
		t.Errorf("COLUMNS=200: width %d", w)
	}
}
