package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

type fakeProcs struct {
	mu   sync.Mutex
	dead map[int]bool
}

func (f *fakeProcs) Alive(pid int, _ uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.dead[pid]
}

type fakeGit struct{ err error }

func (g *fakeGit) Check(context.Context, string, []string) error { return g.err }

var t0 = time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)

func testConfig(t *testing.T, dir string) Config {
	cfg := DefaultConfig()
	cfg.DataDir = dir
	cfg.Socket = filepath.Join(dir, "s.sock")
	cfg.Name = "testnode"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Clock = clock.NewFake(t0.Add(time.Hour))
	cfg.ReapInterval = time.Hour
	cfg.SpoolInterval = time.Hour
	cfg.Cluster.Enabled = false
	return cfg
}

func openNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func ev(session, id, typ string, sec int, attrs map[string]any) presence.Event {
	return presence.Event{ID: id, SessionID: session, Type: typ, TS: t0.Add(time.Duration(sec) * time.Second), Agent: "claude-code", Attrs: attrs}
}

func mustIngest(t *testing.T, n *Node, evs ...presence.Event) {
	t.Helper()
	if _, err := n.Ingest(evs); err != nil {
		t.Fatal(err)
	}
}

func TestSessionGetsUniqueNameAtStart(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n, ev("a", "1", presence.TypeSessionStart, 1, nil), ev("b", "2", presence.TypeSessionStart, 1, nil))
	a, _ := n.Resolve("a")
	b, _ := n.Resolve("b")
	if a.Name == "" || b.Name == "" || a.Name == b.Name {
		t.Fatalf("names %q %q", a.Name, b.Name)
	}
}

func TestOlderEventAppendedLaterDoesNotRollBack(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n, ev("s", "2", presence.TypeTurnStop, 20, nil))
	mustIngest(t, n, ev("s", "1", presence.TypeUserPromptSubmit, 10, nil))
	st, _ := n.Resolve("s")
	if st.Activity != presence.ActivityIdle {
		t.Fatalf("activity %s, want idle", st.Activity)
	}
	evs, _ := n.Ledger().Session("s")
	if want := presence.Fold(evs); want.Activity != st.Activity || want.Events != st.Events {
		t.Fatalf("live %+v != fold %+v", st, want)
	}
}

func TestRestartRebuildsStateAndHeartbeats(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	n := openNode(t, cfg)
	mustIngest(t, n, ev("s", "1", presence.TypeSessionStart, 1, nil),
		ev("s", "2", presence.TypeInputRequested, 2, nil),
		ev("e", "3", presence.TypeSessionStart, 1, nil), ev("e", "4", presence.TypeSessionEnd, 2, nil))
	before, _ := n.Resolve("s")
	n.Close()
	os.RemoveAll(ActiveDir(dir))
	n2 := openNode(t, cfg)
	after, err := n2.Resolve("s")
	if err != nil || after.Activity != presence.ActivityNeedsInput || after.Name != before.Name {
		t.Fatalf("after restart %+v %v", after, err)
	}
	b, err := os.ReadFile(HeartbeatPath(dir, "s"))
	if err != nil {
		t.Fatal("heartbeat not rewritten:", err)
	}
	var hb map[string]any
	json.Unmarshal(b, &hb)
	for _, k := range []string{"activity", "activity_updated_at", "activity_source", "task_state"} {
		if _, ok := hb[k]; !ok {
			t.Errorf("heartbeat lacks %s: %s", k, b)
		}
	}
	if _, err := os.Stat(HeartbeatPath(dir, "e")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("ended session has a heartbeat")
	}
	if all := n2.Sessions(true); len(all) != 2 {
		t.Fatalf("history lost: %d sessions", len(all))
	}
}

func TestReaperEndsSessionWhenProcessGone(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	procs := &fakeProcs{dead: map[int]bool{}}
	cfg.Procs = procs
	n := openNode(t, cfg)
	attrs := map[string]any{presence.AttrAgentPID: 4242, presence.AttrAgentStart: 99}
	mustIngest(t, n, ev("s", "1", presence.TypeUserPromptSubmit, 1, attrs))
	if got := n.keep.Reap(); got != 0 {
		t.Fatalf("reaped %d live sessions", got)
	}
	procs.mu.Lock()
	procs.dead[4242] = true
	procs.mu.Unlock()
	if got := n.keep.Reap(); got != 1 {
		t.Fatalf("reaped %d, want 1", got)
	}
	st, _ := n.Resolve("s")
	if !st.Ended || st.EndReason != ReasonProcessGone {
		t.Fatalf("state %+v", st)
	}
	n.proj.Flush()
	if _, err := os.Stat(HeartbeatPath(cfg.DataDir, "s")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("heartbeat of an ended session remains")
	}
}

func TestLifecycleRefusalWritesNothing(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	git := &fakeGit{err: errors.New("dirty")}
	cfg.Git = git
	n := openNode(t, cfg)
	mustIngest(t, n, ev("s", "1", presence.TypeSessionStart, 1, nil),
		ev("c", "2", presence.TypeSubagentStart, 1, nil))
	mustIngest(t, n, presence.Event{ID: "3", SessionID: "c", ParentSessionID: "s", Type: presence.TypeToolPreUse, TS: t0.Add(2 * time.Second)})
	ctx := context.Background()
	cases := []struct {
		session, check string
		to             presence.TaskState
		reason         string
	}{
		{"s", "reason_required", presence.TaskBlocked, ""},
		{"s", "current_task", presence.TaskDone, ""},
		{"c", "top_level_only", presence.TaskBlocked, "x"},
	}
	for _, c := range cases {
		before, _ := n.Ledger().Session(c.session)
		_, err := n.decl.Lifecycle(ctx, c.session, c.to, c.reason)
		var re *RefusedError
		if !errors.As(err, &re) || re.Check != c.check {
			t.Fatalf("%s %s: err %v, want check %s", c.session, c.to, err, c.check)
		}
		after, _ := n.Ledger().Session(c.session)
		if len(after) != len(before) {
			t.Fatalf("refusal wrote an event")
		}
	}
	if _, _, err := n.decl.SetTask("s", "ship it"); err != nil {
		t.Fatal(err)
	}
	_, err := n.decl.Lifecycle(ctx, "s", presence.TaskDone, "")
	var re *RefusedError
	if !errors.As(err, &re) || re.Check != "git" {
		t.Fatalf("git refusal: %v", err)
	}
	git.err = nil
	res, err := n.decl.Lifecycle(ctx, "s", presence.TaskDone, "complete")
	if err != nil || !res.Recorded || res.State.TaskState != presence.TaskDone {
		t.Fatalf("done: %+v %v", res, err)
	}
	res, err = n.decl.Lifecycle(ctx, "s", presence.TaskDone, "complete")
	if err != nil || res.Recorded {
		t.Fatalf("repeat recorded: %+v %v", res, err)
	}
	_, warn, err := n.decl.SetTask("s", "another")
	if err != nil || warn == "" {
		t.Fatalf("set-task while done: warn %q err %v", warn, err)
	}
	st, _ := n.Resolve("s")
	if st.TaskState != presence.TaskDone {
		t.Fatal("set-task reopened the task")
	}
}

func TestResolvePrefix(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n, ev("abc1", "1", presence.TypeSessionStart, 1, nil), ev("abc2", "2", presence.TypeSessionStart, 1, nil))
	if _, err := n.Resolve("abc"); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("ambiguous: %v", err)
	}
	if s, err := n.Resolve("abc1"); err != nil || s.SessionID != "abc1" {
		t.Fatal(err)
	}
	if _, err := n.Resolve("zzz"); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestPeerContextOnlyWhenChanged(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n, ev("me", "1", presence.TypeSessionStart, 1, nil))
	if got := n.roster.PeerContext("me"); got != "" {
		t.Fatalf("no peers but context %q", got)
	}
	mustIngest(t, n, ev("peer", "2", presence.TypeUserPromptSubmit, 2, nil))
	if got := n.roster.PeerContext("me"); got == "" {
		t.Fatal("a new peer gave no context")
	}
	if got := n.roster.PeerContext("me"); got != "" {
		t.Fatalf("unchanged table injected again: %q", got)
	}
	mustIngest(t, n, ev("peer", "3", presence.TypeInputRequested, 3, nil))
	if got := n.roster.PeerContext("me"); got == "" {
		t.Fatal("a state-only change gave no context")
	}
}

func TestSecondNodeOnSameDataDirRefused(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	openNode(t, cfg)
	n2, _ := New(cfg)
	if err := n2.Open(); !errors.Is(err, ErrLocked) {
		t.Fatalf("second node: %v", err)
	}
}
