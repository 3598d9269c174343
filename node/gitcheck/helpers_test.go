package gitcheck

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testEnv isolates the tests' own git calls from the user's configuration
// and from any GIT_* variables of the calling environment.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	)
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH; the finalization check runs the real git CLI")
	}
}

// git runs git in dir for test setup and returns its trimmed stdout.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = testEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func configure(t *testing.T, dir string) {
	t.Helper()
	git(t, dir, "config", "user.name", "Harn Test")
	git(t, dir, "config", "user.email", "test@harn.invalid")
	git(t, dir, "config", "commit.gpgsign", "false")
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bareRemote creates an empty bare repository under root.
func bareRemote(t *testing.T, root, name string) string {
	t.Helper()
	bare := filepath.Join(root, name+".git")
	git(t, root, "init", "-q", "--bare", "-b", "main", bare)
	return bare
}

// newRepo creates root/work with one commit of a.txt, pushed to a bare
// remote when push is true (the remote is then configured as origin).
func newRepo(t *testing.T, push bool) string {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	git(t, root, "init", "-q", "-b", "main", work)
	configure(t, work)
	write(t, filepath.Join(work, "a.txt"), "one\n")
	write(t, filepath.Join(work, "dir", "b.txt"), "bee\n")
	git(t, work, "add", "-A")
	git(t, work, "commit", "-q", "-m", "initial")
	if push {
		bare := bareRemote(t, root, "remote")
		git(t, work, "remote", "add", "origin", bare)
		git(t, work, "push", "-q", "-u", "origin", "main")
	}
	return realDir(t, work)
}

// superWithSub creates a pushed superproject with a pushed submodule at
// "sub"; it returns the superproject and the submodule work tree.
func superWithSub(t *testing.T) (super, sub string) {
	t.Helper()
	root := t.TempDir()
	subBare := bareRemote(t, root, "sub")
	src := filepath.Join(root, "subsrc")
	git(t, root, "init", "-q", "-b", "main", src)
	configure(t, src)
	write(t, filepath.Join(src, "lib.txt"), "lib v1\n")
	git(t, src, "add", "-A")
	git(t, src, "commit", "-q", "-m", "lib v1")
	git(t, src, "remote", "add", "origin", subBare)
	git(t, src, "push", "-q", "-u", "origin", "main")

	superBare := bareRemote(t, root, "super")
	super = filepath.Join(root, "super")
	git(t, root, "init", "-q", "-b", "main", super)
	configure(t, super)
	write(t, filepath.Join(super, "README"), "super\n")
	git(t, super, "add", "-A")
	git(t, super, "commit", "-q", "-m", "super")
	git(t, super, "-c", "protocol.file.allow=always", "submodule", "add", "-q", subBare, "sub")
	git(t, super, "commit", "-q", "-m", "add sub")
	git(t, super, "remote", "add", "origin", superBare)
	git(t, super, "push", "-q", "-u", "origin", "main")
	sub = filepath.Join(super, "sub")
	configure(t, sub)
	return realDir(t, super), realDir(t, sub)
}

func realDir(t *testing.T, dir string) string {
	t.Helper()
	rp, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// check runs Check with a default config and a bounded context.
func check(t *testing.T, cwd string, paths ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return Check(ctx, DefaultConfig(), cwd, paths)
}

// wantCheck asserts err is a *CheckError for check, wrapping
// ErrFinalization, and returns it.
func wantCheck(t *testing.T, err error, check string) *CheckError {
	t.Helper()
	var ce *CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T); want *CheckError %s", err, err, check)
	}
	if ce.Check != check {
		t.Fatalf("Check = %q (%v); want %q", ce.Check, err, check)
	}
	if !errors.Is(err, ErrFinalization) {
		t.Fatalf("%v does not wrap ErrFinalization", err)
	}
	if msg := err.Error(); strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, "git finalization check "+check+" failed in ") {
		t.Fatalf("Error() = %q; want one line naming the check", msg)
	}
	return ce
}

func wantPass(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Check = %v; want pass", err)
	}
}
