package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A remote `harn run` names a built-in agent or a launcher the target
// lists in --remote-exec, in a directory inside its --workspace roots,
// never its data dir; anything else is refused (exit 16) and nothing
// runs. A name that is no agent or launcher is not run as a command.
func TestARemoteRunRunsNoFreeCommandAndStaysInTheWorkspace(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "input.log")
	marker := filepath.Join(t.TempDir(), "ran")
	env := []string{launcherConfig(t, map[string][]string{"fakehost": hostedLauncher(t, log, "300ms"),
		"unlisted": {"/bin/sh", "-c", "touch " + marker}}),
		"HARN_REMOTE_CONTROL=n1", "HARN_REMOTE_EXEC=fakehost", "HARN_WORKSPACE=" + root}
	s0, n1 := trustedMesh(t, env...)
	inside := gitRepoAt(t, filepath.Join(root, "app"))
	outside := t.TempDir()

	refused(t, "a launcher --remote-exec does not list", n1.harn("", "run", "unlisted", "--node", "s0", "--dir", inside), "--remote-exec (fakehost)")
	refused(t, "a directory outside the workspace", n1.harn("", "run", "fakehost", "--node", "s0", "--dir", outside), "outside its workspaces")
	refused(t, "the target's data dir", n1.harn("", "run", "fakehost", "--node", "s0", "--dir", s0.dataDir), "workdir")
	if r := n1.harn("", "run", "/bin/sh", "--node", "s0", "--dir", inside); r.code != 2 || !strings.Contains(r.stderr, "no agent or launcher") {
		t.Fatalf("a command as the agent: %v", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused run ran its command")
	}
	if out := s0.ok("agents", "list", "--json"); strings.Contains(out, `"hs-`) {
		t.Fatalf("a refused run opened a hosted session: %s", out)
	}
	// The same launcher runs for s0's own operator anywhere.
	var run struct{ Session string }
	mustJSON(t, s0.ok("run", "unlisted", "--dir", outside, "--json"), &run)
	eventually(t, stateTimeout, "the local run ran", func() (bool, string) {
		_, err := os.Stat(marker)
		return err == nil, fmt.Sprint(err)
	})
}

// Under the default policy (--remote-control off) another node neither
// runs, steers, interrupts, stops nor attaches to s0's hosted agents.
func TestRemoteControlOffRefusesEveryHostedAction(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "input.log")
	s0, n1 := trustedMesh(t, launcherConfig(t, map[string][]string{"fakehost": hostedLauncher(t, log, "300ms")}),
		"HARN_REMOTE_EXEC=fakehost", "HARN_WORKSPACE="+root)
	refused(t, "a remote run", n1.harn("", "run", "fakehost", "--node", "s0", "--dir", root), "--remote-control off")
	var run struct{ Session string }
	mustJSON(t, s0.ok("run", "fakehost", "--dir", root, "--json"), &run)
	eventually(t, meshTimeout, "n1 knows the session", func() (bool, string) {
		row, why := hostedRowOf(n1, run.Session)
		return row.SessionID != "", why
	})
	refused(t, "a remote steer", n1.harn("", "task", "steer", "--session", run.Session, "x"), "--remote-control off")
	refused(t, "a remote interrupt", n1.harn("", "agents", "interrupt", run.Session), "--remote-control off")
	refused(t, "a remote stop", n1.harn("", "agents", "stop", run.Session), "--remote-control off")
	p := startPTY(t, n1.hookEnv(), 24, 80, "attach", run.Session)
	if code := p.exit(); code != 16 || !strings.Contains(p.output(), "--remote-control off") {
		t.Fatalf("a remote attach: exit %d: %s", code, p.output())
	}
	if b := inputLog(log); strings.Contains(string(b), "x\r") || strings.Contains(string(b), "\x1b") {
		t.Fatalf("a refused action reached the agent: %q", b)
	}
	if row, _ := hostedRowOf(s0, run.Session); row.Ended {
		t.Fatal("a refused stop ended the session")
	}
}

// A node that only --remote-watch names sees the screen and cannot type.
func TestAWatcherSeesTheScreenAndCannotType(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "input.log")
	s0, n1 := trustedMesh(t, launcherConfig(t, map[string][]string{"fakehost": hostedLauncher(t, log, "300ms")}),
		"HARN_REMOTE_WATCH=n1", "HARN_WORKSPACE="+root)
	var run struct{ Session string }
	mustJSON(t, s0.ok("run", "fakehost", "--dir", root, "--json", "hello watcher"), &run)
	eventually(t, meshTimeout, "n1 knows the session", func() (bool, string) {
		row, why := hostedRowOf(n1, run.Session)
		return row.SessionID != "", why
	})
	p := startPTY(t, n1.hookEnv(), 24, 80, "attach", run.Session)
	p.waitFor("the watcher sees the screen", "hello watcher")
	p.write("not from a watcher\r")
	// Then s0's own operator types, and the watcher sees it drawn: the
	// watcher's bytes, had they gone in, would be in the log before it.
	s0.ok("task", "steer", "--session", run.Session, "from the owner")
	p.waitFor("the watcher sees what the owner typed", "from the owner")
	if b := inputLog(log); strings.Contains(string(b), "not from a watcher") {
		t.Fatalf("a watcher's keys reached the agent: %q", b)
	}
	p.write("\x1d")
	if code := p.exit(); code != 0 {
		t.Fatalf("detach: exit %d", code)
	}
	// A local --read-only attach watches too.
	q := startPTY(t, s0.hookEnv(), 24, 80, "attach", "--read-only", run.Session)
	q.waitFor("a read-only attach sees the screen", "from the owner")
	q.write("nor from a reader\r\x1d")
	q.exit()
	if b := inputLog(log); strings.Contains(string(b), "nor from a reader") {
		t.Fatalf("a read-only attach typed: %q", b)
	}
}

// --max-hosted caps a node's live hosted sessions: over it, one line and
// its own exit code; the stopped one makes room.
func TestMaxHostedRefusesWithItsOwnExitCode(t *testing.T) {
	e := newEnv(t)
	log := filepath.Join(t.TempDir(), "input.log")
	e.base = append(e.base, launcherConfig(t, map[string][]string{"fakehost": hostedLauncher(t, log, "300ms")}))
	e.startNode("--no-mesh", "--max-hosted", "1")
	dir := t.TempDir()
	var run struct{ Session string }
	mustJSON(t, e.ok("run", "fakehost", "--dir", dir, "--json"), &run)
	r := e.harn("", "run", "fakehost", "--dir", dir)
	if r.code != 23 || !strings.Contains(r.stderr, "--max-hosted 1") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Fatalf("a run over --max-hosted: %v", r)
	}
	// The refusal's hint runs as printed.
	hint := "harn agents stop " + run.Session
	if !strings.Contains(r.stderr, "("+hint+")") {
		t.Fatalf("the refusal does not say %q: %s", hint, r.stderr)
	}
	e.ok(strings.Fields(hint)[1:]...)
	// The run's own hint attaches, as printed, in a terminal.
	var out string
	eventually(t, stateTimeout, "room for another", func() (bool, string) {
		r := e.harn("", "run", "fakehost", "--dir", dir, "hello hint")
		out = r.stdout
		return r.code == 0, r.String()
	})
	m := regexp.MustCompile(`attach: (harn attach hs-[0-9a-z]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the run printed no attach hint: %q", out)
	}
	p := startPTY(t, e.hookEnv(), 24, 80, strings.Fields(m[1])[1:]...)
	p.waitFor("the printed hint attaches", "hello hint")
	p.write("\x1d")
	if code := p.exit(); code != 0 {
		t.Fatalf("detach: %d %s", code, p.output())
	}
}

// A node's restart ends what it hosted, and the rows say so; a hosted
// process gets none of the node's secrets; a hook outside the hosted
// process cannot claim its session with HARN_HOSTED_ID.
func TestHostedSessionsEndAtTheirNodesRestart(t *testing.T) {
	e := newEnv(t)
	dump := filepath.Join(t.TempDir(), "env")
	e.base = append(e.base, launcherConfig(t, map[string][]string{"envdump": {"/bin/sh", "-c", "env > " + dump + "; exec sleep 300"}}),
		"HARN_HTTP_TOKEN=node-secret-token", "OPENAI_API_KEY=node-secret-key", "GITHUB_TOKEN=node-secret-gh")
	n := e.startNode("--no-mesh")
	var hs struct{ Session string }
	mustJSON(t, e.ok("run", "envdump", "--dir", t.TempDir(), "--json"), &hs)
	eventually(t, stateTimeout, "the environment is written", func() (bool, string) {
		b, _ := os.ReadFile(dump)
		return strings.Contains(string(b), "HARN_HOSTED_ID="+hs.Session), string(b)
	})
	b, _ := os.ReadFile(dump)
	if strings.Contains(string(b), "node-secret") {
		t.Fatalf("a secret of the node reached the hosted process: %s", b)
	}
	// A hook that is not the hosted process names the session: its event
	// stays its own.
	forged := `{"session_id":"intruder-1","hook_event_name":"SessionStart","source":"startup","cwd":"/tmp"}`
	run(t, append(e.hookEnv(), "HARN_HOSTED_ID="+hs.Session), forged, "hook", "claude-code")
	if st := e.show("intruder-1"); st.SessionID != "intruder-1" {
		t.Fatalf("the forged hook's session: %+v", st)
	}
	if st := e.show(hs.Session); st.Events != 1 {
		t.Fatalf("a forged hook reached the hosted row: %+v", st)
	}
	pid := e.show(hs.Session).AgentPID
	e.kill9(n)
	e.startNode("--no-mesh")
	st := e.show(hs.Session)
	if !st.Ended || !strings.Contains(st.EndReason, "node restarted") {
		t.Fatalf("after the restart: %+v", st)
	}
	eventually(t, 5*time.Second, "the hosted process is gone", func() (bool, string) {
		return !pidAlive(pid), fmt.Sprint(pid)
	})
}
