package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runIn runs harn in dir (the commit guard's install reads the repository
// of its working directory).
func runIn(t *testing.T, environ []string, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, harnBin, args...)
	cmd.Env, cmd.Dir = environ, dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		t.Fatalf("harn %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// gitTry runs git like git() and returns its output and whether it
// succeeded.
func gitTry(t *testing.T, environ []string, dir string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	full := append([]string{"-c", "user.name=E2E", "-c", "user.email=e2e@example.com",
		"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), environ...), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func writeFileT(t *testing.T, path, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// holdClaim has session holder claim path (retried until the lone node's
// registry has a leader), and checks that other is then denied it.
func holdClaim(t *testing.T, e *env, cwd, holder, other, path string) {
	t.Helper()
	eventually(t, stateTimeout, holder+" holds "+path, func() (bool, string) {
		e.hook("claude-code", claudePreWrite(holder, cwd, path))
		r := e.hook("claude-code", claudePreWrite(other, cwd, path))
		return denied(r), r.stdout
	})
}

func denied(r result) bool { return strings.Contains(r.stdout, `"permissionDecision":"deny"`) }

// TestCommitGuardRefusesPathsClaimedByAnotherSession: in a real
// repository with a user's own pre-commit hook, `harn hook install git`
// keeps the user's text; a commit staging a path another live session
// claims is refused naming the path and its holder, a commit of free
// paths passes (the user's hook still runs), --no-verify bypasses the
// guard, post-commit prunes the committing session's claims on clean
// paths (not on dirty ones), and uninstall gives back the user's bytes.
func TestCommitGuardRefusesPathsClaimedByAnotherSession(t *testing.T) {
	e := newEnv(t)
	e.startNode("--no-mesh") // claims in the node's own table
	repo := filepath.Join(e.root, "repo")
	git(t, e.base, e.root, "init", "-q", repo)
	marker := filepath.Join(e.root, "user-hook-ran")
	userHook := "#!/bin/sh\n# the user's own check\necho ran >> " + marker + "\n"
	hooks := filepath.Join(repo, ".git", "hooks")
	writeFileT(t, filepath.Join(hooks, "pre-commit"), userHook, 0o755)

	if r := runIn(t, e.hookEnv(), repo, "hook", "install", "git"); r.code != 0 {
		t.Fatalf("install: %v", r)
	}
	pre := readFileT(t, filepath.Join(hooks, "pre-commit"))
	if !strings.HasPrefix(pre, userHook) || !strings.Contains(pre, "# harn:begin") || !strings.Contains(pre, "hook git pre-commit") {
		t.Fatalf("pre-commit after install does not keep the user's text then harn's region:\n%s", pre)
	}
	for _, h := range []string{"post-commit", "post-checkout"} {
		if s := readFileT(t, filepath.Join(hooks, h)); !strings.Contains(s, "hook git "+h) {
			t.Fatalf("%s lacks harn's region:\n%s", h, s)
		}
	}
	if r := runIn(t, e.hookEnv(), repo, "hook", "install", "git"); r.code != 0 || readFileT(t, filepath.Join(hooks, "pre-commit")) != pre {
		t.Fatalf("a second install changed the hook: %v", r)
	}

	// sess-hold claims pkg/x.go; sess-me is the committing session.
	startClaudeSession(&meshNode{env: e}, "sess-hold", repo)
	startClaudeSession(&meshNode{env: e}, "sess-me", repo)
	holdClaim(t, e, repo, "sess-hold", "sess-me", filepath.Join(repo, "pkg", "x.go"))
	me := append(e.hookEnv(), "HARN_SESSION=sess-me")
	writeFileT(t, filepath.Join(repo, "pkg", "x.go"), "package pkg\n", 0o644)
	writeFileT(t, filepath.Join(repo, "pkg", "y.go"), "package pkg\n", 0o644)
	git(t, me, repo, "add", "pkg/x.go", "pkg/y.go")
	out, ok := gitTry(t, me, repo, "commit", "-q", "-m", "both")
	if ok {
		t.Fatalf("a commit of a path claimed by another session passed:\n%s", out)
	}
	for _, want := range []string{"pkg/x.go", "sess-hold", "--no-verify"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pkg/y.go") {
		t.Errorf("the refusal names the free pkg/y.go:\n%s", out)
	}

	// Free paths only: the commit passes, and the user's hook ran.
	git(t, me, repo, "reset", "-q", "pkg/x.go")
	if out, ok := gitTry(t, me, repo, "commit", "-q", "-m", "y only"); !ok {
		t.Fatalf("a commit of free paths was refused:\n%s", out)
	}
	if s, err := os.ReadFile(marker); err != nil || !strings.Contains(string(s), "ran") {
		t.Fatalf("the user's pre-commit did not run: %v", err)
	}

	// --no-verify stays the escape hatch.
	git(t, me, repo, "add", "pkg/x.go")
	if out, ok := gitTry(t, me, repo, "commit", "-q", "--no-verify", "-m", "x anyway"); !ok {
		t.Fatalf("--no-verify did not bypass the guard:\n%s", out)
	}

	// post-commit prunes sess-me's claims on clean paths only.
	z, w := filepath.Join(repo, "pkg", "z.go"), filepath.Join(repo, "pkg", "w.go")
	for _, p := range []string{z, w} {
		if r := e.hook("claude-code", claudePreWrite("sess-me", repo, p)); denied(r) {
			t.Fatalf("sess-me's claim on %s was denied: %v", p, r)
		}
		writeFileT(t, p, "package pkg\n", 0o644)
	}
	if r := e.hook("claude-code", claudePreWrite("sess-hold", repo, z)); !denied(r) {
		t.Fatalf("before the commit, sess-me's claim on z.go did not hold: %v", r)
	}
	git(t, me, repo, "add", "pkg/z.go")
	if out, ok := gitTry(t, me, repo, "commit", "-q", "-m", "z"); !ok {
		t.Fatalf("sess-me's commit of its own claimed file was refused:\n%s", out)
	}
	if r := e.hook("claude-code", claudePreWrite("sess-hold", repo, z)); denied(r) {
		t.Fatalf("post-commit did not release sess-me's claim on the committed pkg/z.go: %v", r)
	}
	if r := e.hook("claude-code", claudePreWrite("sess-hold", repo, w)); !denied(r) {
		t.Fatalf("post-commit released sess-me's claim on the dirty pkg/w.go: %v", r)
	}

	// Uninstall removes only harn's region.
	if r := runIn(t, e.hookEnv(), repo, "hook", "uninstall", "git"); r.code != 0 {
		t.Fatalf("uninstall: %v", r)
	}
	if s := readFileT(t, filepath.Join(hooks, "pre-commit")); s != userHook {
		t.Fatalf("uninstall did not give back the user's pre-commit:\n%q\nwant\n%q", s, userHook)
	}
	for _, h := range []string{"post-commit", "post-checkout"} {
		if _, err := os.Stat(filepath.Join(hooks, h)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, which held only harn's region, is still there (%v)", h, err)
		}
	}
}

// TestCommitGuardFailsOpenWithoutANode: with no node answering, the
// pre-commit hook lets the commit through with a one-line warning, well
// within its bound.
func TestCommitGuardFailsOpenWithoutANode(t *testing.T) {
	e := newEnv(t)
	repo := filepath.Join(e.root, "repo")
	git(t, e.base, e.root, "init", "-q", repo)
	if r := runIn(t, e.hookEnv(), repo, "hook", "install", "git"); r.code != 0 {
		t.Fatalf("install: %v", r)
	}
	writeFileT(t, filepath.Join(repo, "a.go"), "package a\n", 0o644)
	git(t, e.hookEnv(), repo, "add", "a.go")
	start := time.Now()
	out, ok := gitTry(t, e.hookEnv(), repo, "commit", "-q", "-m", "a")
	if !ok || !strings.Contains(out, "commit guard skipped") {
		t.Fatalf("without a node the commit must pass with a warning:\n%s", out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the commit took %s without a node", d)
	}
}

// TestCommitGuardChainsANonShellHook: a hook that is not a shell script
// (a hook manager's binary) is kept and run first; uninstall puts it back.
func TestCommitGuardChainsANonShellHook(t *testing.T) {
	e := newEnv(t)
	repo := filepath.Join(e.root, "repo")
	git(t, e.base, e.root, "init", "-q", repo)
	hooks := filepath.Join(repo, ".git", "hooks")
	manager := "#!/usr/bin/env python3\nimport sys; sys.exit(0)\n"
	writeFileT(t, filepath.Join(hooks, "pre-commit"), manager, 0o755)
	if r := runIn(t, e.hookEnv(), repo, "hook", "install", "git"); r.code != 0 || !strings.Contains(r.stdout, "harn-chained") {
		t.Fatalf("install: %v", r)
	}
	if s := readFileT(t, filepath.Join(hooks, "pre-commit.harn-chained")); s != manager {
		t.Fatalf("the manager's hook was not kept:\n%s", s)
	}
	if s := readFileT(t, filepath.Join(hooks, "pre-commit")); !strings.Contains(s, "pre-commit.harn-chained") {
		t.Fatalf("harn's pre-commit does not call the kept hook:\n%s", s)
	}
	if r := runIn(t, e.hookEnv(), repo, "hook", "uninstall", "git"); r.code != 0 {
		t.Fatalf("uninstall: %v", r)
	}
	if s := readFileT(t, filepath.Join(hooks, "pre-commit")); s != manager {
		t.Fatalf("uninstall did not put the manager's hook back:\n%s", s)
	}
}

// TestReleaseClaimFreesThePathForAnotherSession: `harn agents
// release-claim PATH` (the session's own, found through the agent's
// session variable) and `--session ID --all` (the operator's) drop claims,
// and the path is free for another session at once.
func TestReleaseClaimFreesThePathForAnotherSession(t *testing.T) {
	e := newEnv(t)
	e.startNode("--no-mesh")
	repo := filepath.Join(e.root, "repo")
	git(t, e.base, e.root, "init", "-q", repo)
	x := filepath.Join(repo, "pkg", "x.go")
	startClaudeSession(&meshNode{env: e}, "sess-a", repo)
	startClaudeSession(&meshNode{env: e}, "sess-b", repo)
	holdClaim(t, e, repo, "sess-a", "sess-b", x)

	r := runIn(t, append(e.hookEnv(), "CLAUDE_SESSION_ID=sess-a"), repo, "agents", "release-claim", "pkg/x.go")
	if r.code != 0 || !strings.Contains(r.stdout, "released 1 claim") || !strings.Contains(r.stdout, "pkg/x.go") {
		t.Fatalf("release-claim of the session's own path: %v", r)
	}
	if r := e.hook("claude-code", claudePreWrite("sess-b", repo, x)); denied(r) {
		t.Fatalf("after the release, sess-b is still denied: %v", r)
	}
	// sess-b holds it now; the operator releases all of sess-b's claims.
	if r := e.hook("claude-code", claudePreWrite("sess-a", repo, x)); !denied(r) {
		t.Fatalf("sess-b's new claim does not hold: %v", r)
	}
	r = runIn(t, e.hookEnv(), repo, "agents", "release-claim", "--session", "sess-b", "--all", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"path": "pkg/x.go"`) {
		t.Fatalf("release-claim --all: %v", r)
	}
	if r := e.hook("claude-code", claudePreWrite("sess-a", repo, x)); denied(r) {
		t.Fatalf("after --all, sess-a is still denied: %v", r)
	}
	// Bad input: neither paths nor --all, or both; a path outside a repository.
	for _, args := range [][]string{{"agents", "release-claim"}, {"agents", "release-claim", "--all", "x"}} {
		if r := runIn(t, e.hookEnv(), repo, args...); r.code != 2 {
			t.Errorf("%v: want exit 2: %v", args, r)
		}
	}
	if r := runIn(t, e.hookEnv(), e.root, "agents", "release-claim", "--session", "sess-a", "nowhere.go"); r.code != 2 || !strings.Contains(r.stderr, "not in a git repository") {
		t.Errorf("a path outside any repository: want exit 2: %v", r)
	}
}

// TestAgentsEndWritesTheReapersEvent: `harn agents end` ends a session
// with the session.end the reaper writes, reason operator by default or
// --reason; its claims end with it; a second end says it had ended.
func TestAgentsEndWritesTheReapersEvent(t *testing.T) {
	e := newEnv(t)
	e.startNode("--no-mesh")
	repo := filepath.Join(e.root, "repo")
	git(t, e.base, e.root, "init", "-q", repo)
	x := filepath.Join(repo, "x.go")
	startClaudeSession(&meshNode{env: e}, "sess-end-1", repo)
	startClaudeSession(&meshNode{env: e}, "sess-end-2", repo)
	holdClaim(t, e, repo, "sess-end-1", "sess-end-2", x)

	if r := e.harn("", "agents", "end", "--session", "sess-end-1"); r.code != 0 || !strings.Contains(r.stdout, "reason operator") {
		t.Fatalf("end: %v", r)
	}
	st := e.show("sess-end-1")
	if !st.Ended || st.EndReason != "operator" {
		t.Fatalf("after end: ended %v reason %q", st.Ended, st.EndReason)
	}
	evs := e.trace("sess-end-1")
	if last := evs[len(evs)-1]; last.Type != "session.end" {
		t.Fatalf("the last event is %q, want session.end", last.Type)
	}
	if r := e.hook("claude-code", claudePreWrite("sess-end-2", repo, x)); denied(r) {
		t.Fatalf("the ended session's claim still holds: %v", r)
	}
	if r := e.harn("", "agents", "end", "--session", "sess-end-1"); r.code != 0 || !strings.Contains(r.stdout, "already ended") {
		t.Fatalf("a second end: %v", r)
	}
	if r := runIn(t, append(e.hookEnv(), "CLAUDE_SESSION_ID=sess-end-2"), repo, "agents", "end", "--reason", "stuck on a prompt"); r.code != 0 {
		t.Fatalf("end of the caller's own session: %v", r)
	}
	if st := e.show("sess-end-2"); !st.Ended || st.EndReason != "stuck on a prompt" {
		t.Fatalf("after end --reason: ended %v reason %q", st.Ended, st.EndReason)
	}
	if r := e.harn("", "agents", "end", "--session", "no-such-session"); r.code != 3 {
		t.Fatalf("end of an unknown session: want exit 3: %v", r)
	}
}

// TestAgentsPingAsksTheOwner: on two nodes, a ping from B of a session on
// A answers from A that its agent process (this test) is alive; a remote
// end over the plaintext mesh is refused with exit 16; once A is down,
// the ping says the owner is unreachable (exit 5) within about a second.
func TestAgentsPingAsksTheOwner(t *testing.T) {
	nodes := startServers(t, 2)
	a, b := nodes[0], nodes[1]
	cwd := t.TempDir()
	startClaudeSession(a, "sess-ping", cwd)
	if r := a.harn("", "agents", "ping", "sess-ping"); r.code != 0 || !strings.Contains(r.stdout, "alive") {
		t.Fatalf("local ping: %v", r)
	}
	eventually(t, meshTimeout, "B pings A's session", func() (bool, string) {
		r := b.harn("", "agents", "ping", "sess-ping")
		return r.code == 0 && strings.Contains(r.stdout, "on node "+a.name) && strings.Contains(r.stdout, "alive"), r.String()
	})
	if r := b.harn("", "agents", "end", "--session", "sess-ping"); r.code != 16 || !strings.Contains(r.stderr, "not mutually authenticated") {
		t.Fatalf("a remote end over a plaintext mesh must be refused with exit 16: %v", r)
	}
	if st := a.show("sess-ping"); st.Ended {
		t.Fatal("the refused remote end ended the session")
	}
	if r := a.harn("", "agents", "ping", "no-such-session"); r.code != 3 {
		t.Fatalf("ping of an unknown session: want exit 3: %v", r)
	}
	a.stop()
	start := time.Now()
	r := b.harn("", "agents", "ping", "sess-ping")
	if r.code != 5 || !strings.Contains(r.stderr, a.name) && !strings.Contains(r.stderr, "did not answer") {
		t.Fatalf("ping with the owner down: want exit 5 naming it: %v", r)
	}
	// The answer's own bound is 1 s; the process start is on top.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("ping with the owner down took %s", d)
	}
}

// TestCommitGuardHonoursCoreHooksPath: with core.hooksPath set, the
// guard goes into that folder, not .git/hooks.
func TestCommitGuardHonoursCoreHooksPath(t *testing.T) {
	e := newEnv(t)
	repo := filepath.Join(e.root, "repo")
	git(t, e.base, e.root, "init", "-q", repo)
	git(t, e.base, repo, "config", "core.hooksPath", ".githooks")
	env := append(e.hookEnv(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if r := runIn(t, env, repo, "hook", "install", "git", "--scope", "repo"); r.code != 0 {
		t.Fatalf("install: %v", r)
	}
	if s := readFileT(t, filepath.Join(repo, ".githooks", "pre-commit")); !strings.Contains(s, "hook git pre-commit") {
		t.Fatalf(".githooks/pre-commit:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "hooks", "pre-commit")); err == nil {
		t.Fatal("the guard went into .git/hooks despite core.hooksPath")
	}
	if r := runIn(t, env, repo, "hook", "install", "git", "--scope", "user"); r.code != 2 {
		t.Fatalf("--scope user for git: want exit 2: %v", r)
	}
}
