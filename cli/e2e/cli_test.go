package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// git runs git in dir with a clean, fixed configuration.
func git(t *testing.T, environ []string, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	full := append([]string{"-c", "user.name=E2E", "-c", "user.email=e2e@example.com",
		"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), environ...), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestGitFinalizationThroughCLI: `harn agents lifecycle done` is refused
// while the session's claimed file is dirty, then while its commit is
// unpushed, and accepted once pushed; the other lifecycle rules refuse
// with exit 4. A refusal writes no event and leaves the heartbeat as it
// was, byte for byte.
func TestGitFinalizationThroughCLI(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e := newEnv(t)
	e.startNode()
	tmp := t.TempDir()
	repo, remote := filepath.Join(tmp, "repo"), filepath.Join(tmp, "remote.git")
	git(t, e.base, tmp, "init", "--bare", remote)
	git(t, e.base, tmp, "init", repo)
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# shop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, e.base, repo, "add", "README.md")
	git(t, e.base, repo, "commit", "-m", "initial")
	git(t, e.base, repo, "remote", "add", "origin", remote)
	git(t, e.base, repo, "push", "-u", "origin", "main")

	sid, child := "git-8a1f-4e21", "git-sub-a3c9"
	claimed := filepath.Join(repo, "cart", "total.go")
	e.hook("claude-code", claudeStart(sid, repo))
	e.hook("claude-code", claudePrompt(sid, repo))
	e.hook("claude-code", claudePreWrite(sid, repo, claimed))
	// A claim made before the lone node's registry elected itself shows
	// pending until its retry lands.
	eventually(t, stateTimeout, "the claim is held", func() (bool, string) {
		st := e.show(sid)
		return reflect.DeepEqual(st.Claims, []string{claimed}), fmt.Sprintf("claims %v, want [%s]", st.Claims, claimed)
	})
	if err := os.MkdirAll(filepath.Dir(claimed), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(claimed, []byte("package cart\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// refusedFor checks that a lifecycle command for session id exits 4
	// naming check, and that it wrote nothing.
	refusedFor := func(id, check string, args ...string) {
		t.Helper()
		hbBefore, err := os.ReadFile(e.heartbeatPath(id))
		if err != nil {
			t.Fatal(err)
		}
		before := len(e.trace(id))
		r := e.harn("", append([]string{"agents", "lifecycle", "--session", id}, args...)...)
		if r.code != 4 || !strings.Contains(r.stderr, check) {
			t.Fatalf("want exit 4 naming %q: %v", check, r)
		}
		oneLineErr(t, r)
		evs := e.trace(id)
		if len(evs) != before {
			t.Fatalf("a refused declaration (%s) wrote %d events: %v", check, len(evs)-before, types(evs[before:]))
		}
		hbAfter, err := os.ReadFile(e.heartbeatPath(id))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(hbBefore, hbAfter) {
			t.Fatalf("a refused declaration (%s) changed the heartbeat:\n%s\n->\n%s", check, hbBefore, hbAfter)
		}
	}
	refused := func(check string, args ...string) { t.Helper(); refusedFor(sid, check, args...) }
	const reason = "implementation and verification complete"
	done := []string{"done", "--reason", reason}

	// Let the heartbeat settle (all four events, the claim included)
	// before comparing it byte for byte.
	eventually(t, stateTimeout, "heartbeat shows the claim", func() (bool, string) {
		b, _ := os.ReadFile(e.heartbeatPath(sid))
		// Four events, or six when the claim was pending first
		// (claim.pending, then claim.write when its retry landed).
		settled := bytes.Contains(b, []byte(`"events": 4`)) || bytes.Contains(b, []byte(`"events": 6`))
		return bytes.Contains(b, []byte("cart/total.go")) && !bytes.Contains(b, []byte(`"pending_claims"`)) && settled, string(b)
	})
	// No task yet.
	refused("current_task", done...)
	e.ok("agents", "set-task", "--session", sid, "fix the checkout rounding")
	eventually(t, stateTimeout, "heartbeat shows the task", func() (bool, string) {
		b, _ := os.ReadFile(e.heartbeatPath(sid))
		return bytes.Contains(b, []byte("fix the checkout rounding")), string(b)
	})

	refused("git_dirty", done...)
	git(t, e.base, repo, "add", "cart/total.go")
	refused("git_dirty", done...) // staged is not committed
	git(t, e.base, repo, "commit", "-m", "cart: total")
	refused("git_unpushed", done...)
	git(t, e.base, repo, "push", "origin", "main")

	var res struct {
		Recorded bool        `json:"recorded"`
		Session  sessionJSON `json:"session"`
	}
	mustJSON(t, e.ok(append([]string{"agents", "lifecycle", "--json", "--session", sid}, done...)...), &res)
	if !res.Recorded || res.Session.TaskState != "done" || res.Session.TaskStateUpdatedAt == "" {
		t.Fatalf("done after the push: recorded %v, task_state %q (at %q)", res.Recorded, res.Session.TaskState, res.Session.TaskStateUpdatedAt)
	}
	wantName := "[DONE] - Agent " + res.Session.Name + " - fix the checkout rounding"
	if res.Session.SessionName != wantName {
		t.Errorf("session_name %q, want %q", res.Session.SessionName, wantName)
	}
	lifecycleEvents := func() []eventJSON {
		var out []eventJSON
		for _, ev := range e.trace(sid) {
			if ev.Type == "state.task_state" {
				out = append(out, ev)
			}
		}
		return out
	}
	lc := lifecycleEvents()
	if len(lc) != 1 || lc[0].Attrs["task_state"] != "done" || lc[0].Attrs["reason"] != reason ||
		lc[0].Attrs["suggested_session_name"] != wantName || lc[0].Attrs["name_reminted"] != true {
		t.Fatalf("lifecycle events %+v", lc)
	}
	var hb map[string]any
	eventually(t, stateTimeout, "heartbeat shows done", func() (bool, string) {
		b, err := os.ReadFile(e.heartbeatPath(sid))
		hb = nil
		if err != nil || json.Unmarshal(b, &hb) != nil {
			return false, fmt.Sprint(err)
		}
		return hb["task_state"] == "done", string(b)
	})
	for _, k := range []string{"activity", "activity_updated_at", "activity_source", "task_state", "task_state_updated_at"} {
		if v, _ := hb[k].(string); v == "" {
			t.Errorf("heartbeat lacks %q: %v", k, hb)
		}
	}

	refused("reason_required", "blocked")
	refused("reason_required", "blocked", "--reason", "   ")

	e.hook("claude-code", claudeSubStart(sid, repo, child))
	if st := e.status(child); st.Ended || st.Activity != "idle" {
		t.Fatalf("subagent: %+v", st)
	}
	e.waitHeartbeat(child, "idle", "subagent.start")
	refusedFor(child, "top_level_only", "blocked", "--reason", "waiting for the parent")
	refusedFor(child, "top_level_only", "active", "--reason", "resuming")
	if n := countType(e.trace(child), "state.task_state"); n != 0 {
		t.Fatalf("a refused subagent declaration wrote %d lifecycle events", n)
	}

	hbBefore, _ := os.ReadFile(e.heartbeatPath(sid))
	mustJSON(t, e.ok(append([]string{"agents", "lifecycle", "--json", "--session", sid}, done...)...), &res)
	if res.Recorded || res.Session.TaskState != "done" {
		t.Fatalf("repeating done with the same reason: recorded %v, task_state %q", res.Recorded, res.Session.TaskState)
	}
	if n := len(lifecycleEvents()); n != 1 {
		t.Fatalf("repeating done recorded an event: %d lifecycle events", n)
	}
	if hbAfter, _ := os.ReadFile(e.heartbeatPath(sid)); !bytes.Equal(hbBefore, hbAfter) {
		t.Fatal("repeating done changed the heartbeat")
	}
}

// TestBadInputExitCodes: each kind of bad input gets its own exit code
// and a one-line error on stderr.
func TestBadInputExitCodes(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	for _, sid := range []string{"amb-1f0c2e", "amb-2b7d4e", "solo-9c3a0d"} {
		e.hook("claude-code", claudeStart(sid, cwd))
	}
	badJSONL := `{"id":"e1","session_id":"s","type":"session.start","ts":"2026-08-12T10:00:00.000Z"}
{"id":"e2","session_id":"s","type":"user_prompt.submit","ts":"2026-08-12T10:00:01.000Z"}
{"id":"e3","session_id":"s","type":"turn.stop","ts":
`
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		says  string
	}{
		{"unknown session", "", []string{"agents", "status", "nosuch"}, 3, "nosuch"},
		{"unknown session (show)", "", []string{"agents", "show", "nosuch"}, 3, "nosuch"},
		{"unknown session (trace)", "", []string{"agents", "trace", "nosuch"}, 3, "nosuch"},
		{"unknown session (lifecycle)", "", []string{"agents", "lifecycle", "active", "--session", "nosuch"}, 3, "nosuch"},
		{"bad state", "", []string{"agents", "lifecycle", "finished", "--session", "solo-9c3a0d"}, 2, "finished"},
		{"missing reason", "", []string{"agents", "lifecycle", "blocked", "--session", "solo-9c3a0d"}, 4, "reason"},
		{"malformed JSONL line", badJSONL, []string{"agents", "fold"}, 2, "line 3"},
		{"fold of an unknown session", `{"id":"e1","session_id":"s","type":"session.start","ts":"2026-08-12T10:00:00.000Z"}`, []string{"agents", "fold", "--session", "t"}, 3, `"t"`},
		{"ambiguous prefix", "", []string{"agents", "status", "amb-"}, 6, "amb-"},
		{"unknown command", "", []string{"frobnicate"}, 2, "frobnicate"},
		{"unknown agents subcommand", "", []string{"agents", "frobnicate"}, 2, "frobnicate"},
		{"unknown node subcommand", "", []string{"node", "frobnicate"}, 2, "frobnicate"},
		{"extra argument", "", []string{"agents", "list", "extra"}, 2, "extra"},
		{"missing argument", "", []string{"agents", "status"}, 2, "session"},
		{"unknown flag", "", []string{"agents", "list", "--bogus"}, 2, "--bogus"},
		{"bad flag value", "", []string{"node", "errors", "--limit", "many"}, 2, "many"},
		{"bad log level", "", []string{"node", "--log-level", "chatty"}, 2, "chatty"},
		{"bad environment value", "", []string{"node", "errors", "HARN_LIMIT=many"}, 2, "HARN_LIMIT"},
		{"empty task", "", []string{"agents", "set-task", "--session", "solo-9c3a0d"}, 2, "task"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			environ, args := e.hookEnv(), c.args
			if last := args[len(args)-1]; strings.HasPrefix(last, "HARN_") {
				environ, args = append(environ, last), args[:len(args)-1] // an environment value
			}
			r := run(t, environ, c.stdin, args...)
			if r.code != c.code {
				t.Fatalf("want exit %d: %v", c.code, r)
			}
			if !strings.Contains(r.stderr, c.says) {
				t.Errorf("stderr %q does not name %q", r.stderr, c.says)
			}
			oneLineErr(t, r)
			if r.stdout != "" {
				t.Errorf("an error also printed %q on stdout", r.stdout)
			}
		})
	}

	t.Run("second node on the same data dir", func(t *testing.T) {
		defer e.use(t)()
		other := filepath.Join(filepath.Dir(e.socket), "s2")
		r := run(t, e.base, "", "node", "--data-dir", e.dataDir, "--socket", other, "--reap-interval", "200ms")
		if r.code != 7 {
			t.Fatalf("want exit 7: %v", r)
		}
		oneLineErr(t, r)
		if _, err := os.Stat(other); err == nil {
			t.Error("the refused node created its socket")
		}
		if _, ok := e.nodeStatus(); !ok {
			t.Error("the first node stopped answering")
		}
	})

	t.Run("second node on another data dir with the same socket", func(t *testing.T) {
		defer e.use(t)()
		first, ok := e.nodeStatus()
		if !ok {
			t.Fatal("the first node does not answer")
		}
		n := e.spawn(e.base, "node", "--data-dir", filepath.Join(e.root, "other"), "--socket", e.socket, "--reap-interval", "200ms")
		took := false
		eventually(t, readyTimeout, "the second node refuses or takes the socket", func() (bool, string) {
			if n.exited() {
				return true, ""
			}
			st, ok := e.nodeStatus()
			took = ok && st.PID == n.pid()
			return took, "still starting"
		})
		if took {
			// Stopping it now also unlinks the socket path, which leaves
			// the first node (still running, still holding its data dir)
			// unreachable until the env's cleanup stops it.
			e.stopNode(n)
			t.Fatal("a node on another data dir took over a live node's socket")
		}
		if code := n.cmd.ProcessState.ExitCode(); code != 7 {
			b, _ := os.ReadFile(n.log)
			t.Errorf("want exit 7, got %d: %s", code, b)
		}
		if st, ok := e.nodeStatus(); !ok || st.PID != first.PID {
			t.Errorf("the first node (pid %d) lost its socket: %+v answers", first.PID, st)
		}
	})

	t.Run("no node answers", func(t *testing.T) {
		dead := filepath.Join(filepath.Dir(e.socket), "none")
		r := run(t, e.base, "", "node", "status", "--socket", dead)
		if r.code != 5 {
			t.Fatalf("want exit 5: %v", r)
		}
		oneLineErr(t, r)
	})
}

// toJSONL turns `agents trace --json` output into canonical JSONL.
func toJSONL(t *testing.T, traceJSON string) []string {
	t.Helper()
	var raw []json.RawMessage
	mustJSON(t, traceJSON, &raw)
	lines := make([]string, 0, len(raw))
	for _, r := range raw {
		var b bytes.Buffer
		if err := json.Compact(&b, r); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b.String())
	}
	return lines
}

// TestFoldCLIMatchesNode: `harn agents fold`, fed a session's trace as
// JSONL, prints exactly what the node's `agents status --json` says, in
// any line order.
func TestFoldCLIMatchesNode(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()

	blocked := "fold-claude-4e21"
	for _, s := range claudeSteps(blocked, cwd)[:4] { // ends in needs_input
		e.hook("claude-code", s.payload())
	}
	e.ok("agents", "set-task", "--session", blocked, "fix the checkout rounding")
	e.ok("agents", "lifecycle", "blocked", "--session", blocked, "--reason", "waiting for repository access")

	ended := "fold-cursor-7d2e"
	for _, s := range cursorSteps(ended, cwd) {
		e.hook("cursor", s.payload())
	}
	gemini := "fold-gem-3d4a-4e5f"
	for _, s := range geminiSteps(gemini, cwd)[:5] {
		e.hook("gemini", s.payload())
	}

	// Hooks run in parallel, so an older event can arrive after a newer
	// one: AfterAgent (turn.stop) arrives before the BeforeTool that
	// happened earlier. The node must not roll back to working.
	late := "fold-late-8a6b-7c8d"
	t0 := time.Date(2026, 8, 12, 10, 3, 4, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	e.hook("gemini", geminiAt(late, cwd, "SessionStart", sec(0), `"source":"startup"`))
	e.hook("gemini", geminiAt(late, cwd, "BeforeAgent", sec(1), `"prompt":"add rounding"`))
	e.hook("gemini", geminiAt(late, cwd, "AfterAgent", sec(5), `"prompt_response":"done"`))
	e.hook("gemini", geminiAt(late, cwd, "BeforeTool", sec(2), `"tool_name":"read_file","tool_input":{"absolute_path":"/a.go"}`))
	if st := e.status(late); st.Activity != "idle" || st.ActivitySource != "turn.stop" {
		t.Errorf("an older event that arrived late rolled the state back: activity %q from %q", st.Activity, st.ActivitySource)
	}
	e.waitHeartbeat(late, "idle", "turn.stop")

	var all []string
	sessions := []string{blocked, ended, gemini, late}
	for _, sid := range sessions {
		lines := toJSONL(t, e.ok("agents", "trace", sid, "--json"))
		all = append(all, lines...)
		var want, got map[string]any
		mustJSON(t, e.ok("agents", "status", sid, "--json"), &want)
		r := e.harn(strings.Join(lines, "\n")+"\n", "agents", "fold")
		if r.code != 0 {
			t.Fatalf("fold: %v", r)
		}
		mustJSON(t, r.stdout, &got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: fold differs from the node\nfold: %v\nnode: %v", sid, got, want)
		}
	}
	want := e.status(blocked)
	if want.TaskState != "blocked" || want.Activity != "needs_input" || want.BlockerReason == "" {
		t.Fatalf("the blocked session is %+v", want)
	}

	// Every session at once, lines reversed: the same states.
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i]
	}
	r := e.harn(strings.Join(all, "\n"), "agents", "fold")
	if r.code != 0 {
		t.Fatalf("fold: %v", r)
	}
	var got []map[string]any
	mustJSON(t, r.stdout, &got)
	sort.Strings(sessions)
	if len(got) != len(sessions) {
		t.Fatalf("fold of %d sessions printed %d states", len(sessions), len(got))
	}
	for i, sid := range sessions {
		var w map[string]any
		mustJSON(t, e.ok("agents", "status", sid, "--json"), &w)
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("%s (reversed input): fold differs from the node\nfold: %v\nnode: %v", sid, got[i], w)
		}
	}
}

// TestEnvAndConfigPrecedence: for `harn node`, --data-dir beats
// HARN_DATA_DIR, which beats the config file's data-dir (given by --config
// or HARN_CONFIG).
func TestEnvAndConfigPrecedence(t *testing.T) {
	e := newEnv(t)
	dirs := t.TempDir()
	fromConfig, fromEnv, fromFlag := filepath.Join(dirs, "config"), filepath.Join(dirs, "env"), filepath.Join(dirs, "flag")
	kv := filepath.Join(dirs, "harn.conf")
	if err := os.WriteFile(kv, []byte("# harn\ndata-dir = "+fromConfig+"\nreap-interval = 200ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dirs, "harn.json")
	b, _ := json.Marshal(map[string]string{"data-dir": fromConfig})
	if err := os.WriteFile(js, b, 0o600); err != nil {
		t.Fatal(err)
	}
	with := func(extra ...string) []string { return append(append([]string(nil), e.base...), extra...) }
	cases := []struct {
		name    string
		environ []string
		args    []string
		want    string
	}{
		{"config file", with(), []string{"--config", kv}, fromConfig},
		{"HARN_CONFIG (JSON)", with("HARN_CONFIG=" + js), nil, fromConfig},
		{"env beats config", with("HARN_DATA_DIR=" + fromEnv), []string{"--config", kv}, fromEnv},
		{"flag beats env and config", with("HARN_DATA_DIR=" + fromEnv), []string{"--config", kv, "--data-dir", fromFlag}, fromFlag},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer e.use(t)()
			n := e.spawn(c.environ, append([]string{"node", "--socket", e.socket}, c.args...)...)
			e.waitReady(n)
			st, ok := e.nodeStatus()
			if !ok {
				t.Fatal("node does not answer")
			}
			e.stopNode(n)
			if code := n.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("node exited %d on SIGTERM", code)
			}
			if st.DataDir != c.want {
				t.Fatalf("data_dir %q, want %q", st.DataDir, c.want)
			}
			if _, err := os.Stat(filepath.Join(c.want, "ledger")); err != nil {
				t.Errorf("no ledger in the chosen data dir: %v", err)
			}
			if !waitGone(n.pid(), e.socket, 10*time.Second) {
				t.Error("the node's socket outlived it")
			}
		})
	}
	for _, d := range []string{fromConfig, fromEnv, fromFlag} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was never used: %v", d, err)
		}
	}
}
