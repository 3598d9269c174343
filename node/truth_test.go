package node

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// at is an event of session at the node's (fake) clock reading.
func at(n *Node, session, id, typ string, attrs map[string]any) presence.Event {
	return presence.Event{ID: id, SessionID: session, Type: typ, TS: n.cfg.Clock.Now(), Agent: "claude-code", Attrs: attrs}
}

func rosterRow(t *testing.T, n *Node, id string) (roster.Entry, map[string]any) {
	t.Helper()
	rows, _, err := n.roster.List(context.Background(), false, false, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.State().SessionID == id {
			b, err := r.Encode()
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			return r, m
		}
	}
	t.Fatalf("session %s not in the roster", id)
	return roster.Entry{}, nil
}

// TestWorkingSessionSilentAfterSilenceAfter: a working session with no
// evidence for longer than SilenceAfter is marked silent_since (its JSON
// too, cached or not); its activity stays working. New evidence ends the
// silence.
func TestWorkingSessionSilentAfterSilenceAfter(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	clk := cfg.Clock.(*clock.Fake)
	n := openNode(t, cfg)
	mustIngest(t, n, at(n, "w", "1", presence.TypeUserPromptSubmit, nil))
	began := clk.Now()
	if r, m := rosterRow(t, n, "w"); !r.State().SilentSince.IsZero() || m["silent_since"] != nil {
		t.Fatalf("silent at once: %+v", m)
	}
	clk.Advance(DefaultSilenceAfter)
	if r, _ := rosterRow(t, n, "w"); !r.State().SilentSince.IsZero() {
		t.Fatal("silent at exactly SilenceAfter")
	}
	clk.Advance(time.Second)
	r, m := rosterRow(t, n, "w")
	if !r.State().SilentSince.Equal(began) || m["silent_since"] != presence.FormatTime(began) {
		t.Fatalf("silent_since %v / %v, want %v", r.State().SilentSince, m["silent_since"], began)
	}
	if r.State().Activity != presence.ActivityWorking || m["activity"] != "working" {
		t.Fatalf("silence changed the activity: %v", m["activity"])
	}
	if st, _ := n.Resolve("w"); st.Activity != presence.ActivityWorking || !st.SilentSince.IsZero() {
		t.Fatalf("the folded state changed: %+v", st)
	}
	mustIngest(t, n, at(n, "w", "2", presence.TypeToolPreUse, map[string]any{presence.AttrTool: "Bash"}))
	if r, m := rosterRow(t, n, "w"); !r.State().SilentSince.IsZero() || m["silent_since"] != nil {
		t.Fatalf("new evidence left it silent: %+v", m)
	}
}

// TestSubagentInputSurfacesOnParent: a subagent's input request shows on
// its top-level session (needs_input, waiting_child); the child row stays
// as it is, with its parent_session_id.
func TestSubagentInputSurfacesOnParent(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n, at(n, "p", "1", presence.TypeUserPromptSubmit, nil))
	child := at(n, "c", "2", presence.TypeSubagentStart, nil)
	child.ParentSessionID = "p"
	req := at(n, "c", "3", presence.TypeInputRequested, map[string]any{presence.AttrSummary: "Bash: git"})
	req.ParentSessionID = "p"
	mustIngest(t, n, child, req)
	p, pm := rosterRow(t, n, "p")
	if p.State().Activity != presence.ActivityNeedsInput || p.State().WaitingChild != "c" || pm["waiting_child"] != "c" ||
		!strings.HasPrefix(p.State().WaitingOn, presence.SubagentPrefix) {
		t.Fatalf("parent %+v", pm)
	}
	c, cm := rosterRow(t, n, "c")
	if c.State().Activity != presence.ActivityNeedsInput || cm["parent_session_id"] != "p" || cm["waiting_child"] != nil {
		t.Fatalf("child %+v", cm)
	}
	if st, _ := n.Resolve("p"); st.Activity != presence.ActivityWorking {
		t.Fatalf("surfacing changed the parent's folded state: %s", st.Activity)
	}
}

// TestWhoamiResolvesSubagentToItself: a subagent shares its parent's
// agent process; a command it runs resolves to the subagent (its latest
// event), and its lifecycle declaration is refused.
func TestWhoamiResolvesSubagentToItself(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	clk := cfg.Clock.(*clock.Fake)
	n := openNode(t, cfg)
	pid := map[string]any{presence.AttrAgentPID: 4242, presence.AttrAgentStart: 99}
	mustIngest(t, n, at(n, "p", "1", presence.TypeUserPromptSubmit, pid))
	clk.Advance(time.Second)
	sub := at(n, "c", "2", presence.TypeSubagentStart, pid)
	sub.ParentSessionID = "p"
	mustIngest(t, n, sub)
	clk.Advance(time.Second)
	pre := at(n, "c", "3", presence.TypeToolPreUse, map[string]any{presence.AttrAgentPID: 4242, presence.AttrAgentStart: 99, presence.AttrTool: "Bash"})
	pre.ParentSessionID = "p"
	mustIngest(t, n, pre)
	st, err := n.decl.Whoami([]Proc{{PID: 1}, {PID: 4242, Start: 99}})
	if err != nil || st.SessionID != "c" {
		t.Fatalf("whoami: %s %v, want the subagent", st.SessionID, err)
	}
	_, err = n.decl.Lifecycle(context.Background(), st.SessionID, presence.TaskBlocked, "waiting")
	var re *RefusedError
	if !errors.As(err, &re) || re.Check != "top_level_only" {
		t.Fatalf("lifecycle from the subagent: %v", err)
	}
	// The parent's own later command resolves to the parent.
	clk.Advance(time.Second)
	mustIngest(t, n, at(n, "p", "4", presence.TypeToolPreUse, map[string]any{presence.AttrAgentPID: 4242, presence.AttrAgentStart: 99, presence.AttrTool: "Bash"}))
	if st, err := n.decl.Whoami([]Proc{{PID: 4242, Start: 99}}); err != nil || st.SessionID != "p" {
		t.Fatalf("whoami after the parent's call: %s %v", st.SessionID, err)
	}
}

// remintName gives session s a task and declares blocked: a re-minted name.
func remintName(t *testing.T, n *Node, s, reason string) string {
	t.Helper()
	if _, _, err := n.decl.SetTask(s, "fix rounding"); err != nil {
		t.Fatal(err)
	}
	res, err := n.decl.Lifecycle(context.Background(), s, presence.TaskBlocked, reason)
	if err != nil {
		t.Fatal(err)
	}
	if !res.State.NamePending() {
		t.Fatalf("no pending name after a re-mint: %+v", res.State)
	}
	return res.State.SuggestedSessionName
}

// TestPendingNameOncePerRemint: the node hands a re-minted name out once
// (a Stop asks once), again for the next re-mint, and not again after a
// restart.
func TestPendingNameOncePerRemint(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	n := openNode(t, cfg)
	mustIngest(t, n, at(n, "s", "1", presence.TypeUserPromptSubmit, nil))
	if got := pendingName(n, "s"); got != "" {
		t.Fatalf("pending name before any re-mint: %q", got)
	}
	name := remintName(t, n, "s", "waiting for access")
	if got := pendingName(n, "s"); got != name {
		t.Fatalf("first ask %q, want %q", got, name)
	}
	if got := pendingName(n, "s"); got != "" {
		t.Fatalf("asked twice for the same re-mint: %q", got)
	}
	n.Close()
	n = openNode(t, cfg)
	if got := pendingName(n, "s"); got != "" {
		t.Fatalf("asked again after a restart: %q", got)
	}
	res, err := n.decl.Lifecycle(context.Background(), "s", presence.TaskActive, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := pendingName(n, "s"); got == "" || got != res.State.SuggestedSessionName || got == name {
		t.Fatalf("next re-mint: %q (state %q)", got, res.State.SuggestedSessionName)
	}
}

// TestTranscriptShowingNameEndsPending: while a name is pending, the
// prompt-time context reminds the agent; an event whose transcript shows
// the name (written by the assistant) records session_name.seen, and the
// reminder stops.
func TestTranscriptShowingNameEndsPending(t *testing.T) {
	dir := t.TempDir()
	n := openNode(t, testConfig(t, dir))
	mustIngest(t, n, at(n, "s", "1", presence.TypeUserPromptSubmit, nil))
	name := remintName(t, n, "s", "waiting for access")
	tr := filepath.Join(dir, "transcript.jsonl")
	user := `{"type":"user","message":{"role":"user","content":"harn: show this session name: ` + name + `"}}` + "\n"
	if err := os.WriteFile(tr, []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	mustIngest(t, n, at(n, "s", "2", presence.TypeUserPromptSubmit, map[string]any{presence.AttrTranscriptPath: tr}))
	n.seen.Settle("s") // the watcher reads off the ingest's path
	if st, _ := n.Resolve("s"); !st.NamePending() {
		t.Fatal("the reminder in a user message counted as shown")
	}
	if got := n.roster.PeerContext("s"); !strings.Contains(got, roster.NameReminder(name)) {
		t.Fatalf("no reminder while pending: %q", got)
	}
	asst := `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + name + `"}]}}` + "\n"
	if err := os.WriteFile(tr, []byte(user+asst), 0o600); err != nil {
		t.Fatal(err)
	}
	mustIngest(t, n, at(n, "s", "3", presence.TypeTurnStop, map[string]any{presence.AttrTranscriptPath: tr}))
	n.seen.Settle("s")
	st, _ := n.Resolve("s")
	if st.NamePending() || st.SessionNameSeenFor != name {
		t.Fatalf("still pending after the assistant showed it: seen %q", st.SessionNameSeenFor)
	}
	if got := n.roster.PeerContext("s"); strings.Contains(got, "show this session name") {
		t.Fatalf("reminder after the name was seen: %q", got)
	}
	if got := pendingName(n, "s"); got != "" {
		t.Fatalf("a seen name is still handed out: %q", got)
	}
}

// pendingName is what the hook's Append answers for NameFor (node/upkeep's
// HookLocal): the transcripts settled, then the session's pending name.
func pendingName(n *Node, session string) string {
	n.seen.Settle(session)
	return n.sess.PendingName(session)
}
