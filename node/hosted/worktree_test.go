package hosted

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a repository with one commit (and a second branch).
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	run("add", ".")
	run("commit", "-q", "-m", "one")
	run("branch", "release")
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644)
	run("add", ".")
	run("commit", "-q", "-m", "two")
	return dir
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestWorktreeRunsTheAgentOnANewBranchFromBase: --worktree makes a
// worktree under <repo>/.harn/worktrees on a new branch from --base (HEAD
// by default); the agent runs there; the main worktree stays clean.
func TestWorktreeRunsTheAgentOnANewBranchFromBase(t *testing.T) {
	repo := gitRepo(t)
	r, sk := newRoom(t, nil)
	in, err := r.Start(Spec{Agent: "shell", Name: "pwd", Argv: []string{"/bin/sh", "-c", "pwd; sleep 30"}, Dir: repo, Worktree: "fix/login", Base: "release"})
	if err != nil {
		t.Fatal(err)
	}
	realRepo, _ := filepath.EvalSymlinks(repo)
	want := filepath.Join(realRepo, ".harn", "worktrees", "fix--login")
	if in.Worktree != want || in.Dir != want || in.Branch != "fix/login" {
		t.Fatalf("info %+v, want worktree %s", in, want)
	}
	eventually(t, "the agent runs in the worktree", func() bool { l, _ := r.Screen(in.ID); return strings.Contains(strings.Join(l, ""), want) })
	if b := gitOut(t, want, "rev-parse", "--abbrev-ref", "HEAD"); b != "fix/login" {
		t.Fatalf("worktree on branch %q", b)
	}
	if gitOut(t, want, "rev-parse", "HEAD") != gitOut(t, repo, "rev-parse", "release") {
		t.Fatal("the branch does not start at --base")
	}
	if s := gitOut(t, repo, "status", "--porcelain"); s != "" {
		t.Fatalf("the main worktree is dirty: %q", s)
	}
	if e := sk.of(in.ID, "session.start"); len(e) != 1 || e[0].AttrString(AttrWorktree) != want {
		t.Fatalf("the start does not name the worktree: %+v", e)
	}
	ws := r.Worktrees()
	if len(ws) != 1 || ws[0].Session != in.ID || !ws[0].Live || !ws[0].Clean {
		t.Fatalf("worktrees %+v", ws)
	}
	// Two hosted sessions never share a worktree.
	if _, err := r.Start(Spec{Agent: "shell", Name: "x", Argv: []string{"/bin/sh"}, Dir: want}); !errors.Is(err, ErrBadStart) {
		t.Fatalf("a second session in the worktree: %v", err)
	}
	if _, err := r.Start(Spec{Agent: "shell", Name: "x", Argv: []string{"/bin/sh"}, Dir: repo, Worktree: "fix/login"}); !errors.Is(err, ErrBadStart) {
		t.Fatalf("a second worktree on the same branch: %v", err)
	}
	// A live session's worktree is not removed, even with --force.
	if _, err := r.RemoveWorktree(want, true); !errors.Is(err, ErrWorktree) {
		t.Fatalf("removing a live session's worktree: %v", err)
	}
}

// TestRemoveRefusesADirtyOrUnpushedWorktreeWithoutForce.
func TestRemoveRefusesADirtyOrUnpushedWorktreeWithoutForce(t *testing.T) {
	repo := gitRepo(t)
	r, _ := newRoom(t, nil)
	in, err := r.Start(Spec{Agent: "shell", Name: "x", Argv: []string{"/bin/sh", "-c", "exit 0"}, Dir: repo, Worktree: "wip"})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Wait(in.ID)
	eventually(t, "ended", func() bool { return !r.Has(in.ID) })
	os.WriteFile(filepath.Join(in.Worktree, "new.txt"), []byte("x"), 0o644)
	if _, err := r.RemoveWorktree("wip", false); !errors.Is(err, ErrWorktree) || !strings.Contains(err.Error(), "uncommitted") {
		t.Fatalf("a dirty worktree: %v", err)
	}
	gitOut(t, in.Worktree, "add", ".")
	cmd := exec.Command("git", "-C", in.Worktree, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "wip")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	ws := r.Worktrees()
	if len(ws) != 1 || !ws[0].Clean || ws[0].Unpushed != 1 {
		t.Fatalf("worktrees %+v", ws)
	}
	if _, err := r.RemoveWorktree("wip", false); !errors.Is(err, ErrWorktree) || !strings.Contains(err.Error(), "no remote holds") {
		t.Fatalf("an unpushed worktree: %v", err)
	}
	msg, err := r.RemoveWorktree("wip", true)
	if err != nil || !strings.Contains(msg, "keeps its commits") {
		t.Fatalf("forced: %q %v", msg, err)
	}
	if _, err := os.Stat(in.Worktree); !os.IsNotExist(err) {
		t.Fatal("the worktree is still there")
	}
	if gitOut(t, repo, "rev-parse", "--verify", "wip") == "" {
		t.Fatal("the branch with a commit was deleted")
	}
	if len(r.Worktrees()) != 0 {
		t.Fatal("the removed worktree is still listed")
	}
}

// TestRemoveTakesACleanWorktreeAndItsEmptyBranch.
func TestRemoveTakesACleanWorktreeAndItsEmptyBranch(t *testing.T) {
	repo := gitRepo(t)
	r, _ := newRoom(t, nil)
	in, err := r.Start(Spec{Agent: "shell", Name: "x", Argv: []string{"/bin/sh", "-c", "exit 0"}, Dir: repo, Worktree: "tidy"})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Wait(in.ID)
	eventually(t, "ended", func() bool { return !r.Has(in.ID) })
	if _, err := r.RemoveWorktree("tidy", false); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("git", "-C", repo, "branch", "--list", "tidy").Output(); strings.TrimSpace(string(out)) != "" {
		t.Fatal("the empty branch stays")
	}
}
