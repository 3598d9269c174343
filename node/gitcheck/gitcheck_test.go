package gitcheck

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCleanPushedPasses(t *testing.T) {
	needGit(t)
	work := newRepo(t, true)
	// An unrelated dirty file is outside the claim and does not matter.
	write(t, filepath.Join(work, "scratch.txt"), "not claimed\n")
	wantPass(t, check(t, work, filepath.Join(work, "a.txt"), "dir/b.txt", "dir"))
	// Relative paths resolve against cwd.
	wantPass(t, check(t, filepath.Join(work, "dir"), "b.txt", "../a.txt"))
}

func TestDirtyClaimFails(t *testing.T) {
	needGit(t)
	cases := []struct {
		name  string
		claim string
		edit  func(t *testing.T, work string)
	}{
		{"modified", "a.txt", func(t *testing.T, work string) {
			write(t, filepath.Join(work, "a.txt"), "two\n")
		}},
		{"untracked", "new.txt", func(t *testing.T, work string) {
			write(t, filepath.Join(work, "new.txt"), "new\n")
		}},
		{"untracked in claimed dir", "dir", func(t *testing.T, work string) {
			write(t, filepath.Join(work, "dir", "deep", "c.txt"), "c\n")
		}},
		{"staged", "a.txt", func(t *testing.T, work string) {
			write(t, filepath.Join(work, "a.txt"), "two\n")
			git(t, work, "add", "a.txt")
		}},
		{"deleted", "dir/b.txt", func(t *testing.T, work string) {
			if err := os.RemoveAll(filepath.Join(work, "dir")); err != nil {
				t.Fatal(err)
			}
		}},
		{"staged deletion", "dir/b.txt", func(t *testing.T, work string) {
			git(t, work, "rm", "-q", "dir/b.txt")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			work := newRepo(t, true)
			tc.edit(t, work)
			ce := wantCheck(t, check(t, work, tc.claim), CheckDirty)
			if ce.Repo != work {
				t.Fatalf("Repo = %q, want %q", ce.Repo, work)
			}
			if len(ce.Paths) == 0 || !strings.HasPrefix(ce.Paths[0], tc.claim) {
				t.Fatalf("Paths = %q, want entries under %q", ce.Paths, tc.claim)
			}
		})
	}
}

func TestDirtyReportedBeforeUnpushed(t *testing.T) {
	needGit(t)
	work := newRepo(t, true)
	write(t, filepath.Join(work, "a.txt"), "two\n")
	git(t, work, "commit", "-q", "-am", "unpushed")
	write(t, filepath.Join(work, "a.txt"), "three\n")
	wantCheck(t, check(t, work, "a.txt"), CheckDirty)
}

func TestLiteralPathspec(t *testing.T) {
	needGit(t)
	work := newRepo(t, true)
	write(t, filepath.Join(work, "*.txt"), "star\n")
	git(t, work, "add", "*.txt")
	git(t, work, "commit", "-q", "-m", "star")
	git(t, work, "push", "-q")
	// x.txt is untracked but not claimed; "*.txt" is not a glob here.
	write(t, filepath.Join(work, "x.txt"), "x\n")
	wantPass(t, check(t, work, "*.txt"))
}

func TestUnpushedCommitFails(t *testing.T) {
	needGit(t)
	work := newRepo(t, true)
	write(t, filepath.Join(work, "a.txt"), "two\n")
	git(t, work, "commit", "-q", "-am", "two")
	ce := wantCheck(t, check(t, work, "a.txt"), CheckUnpushed)
	if ce.Repo != work || !slices.Equal(ce.Paths, []string{"a.txt"}) {
		t.Fatalf("CheckError = %+v", ce)
	}
	git(t, work, "push", "-q")
	wantPass(t, check(t, work, "a.txt"))
}

func TestNoRemoteFails(t *testing.T) {
	needGit(t)
	work := newRepo(t, false)
	ce := wantCheck(t, check(t, work, "a.txt"), CheckUnpushed)
	if !strings.Contains(ce.Detail, "no remote") {
		t.Fatalf("Detail = %q; want it to say there is no remote", ce.Detail)
	}
}

func TestStaleSubmodulePointerFails(t *testing.T) {
	needGit(t)
	super, sub := superWithSub(t)
	write(t, filepath.Join(sub, "lib.txt"), "lib v2\n")
	git(t, sub, "commit", "-q", "-am", "lib v2")
	git(t, sub, "push", "-q", "origin", "HEAD:main")

	ce := wantCheck(t, check(t, super, "sub/lib.txt"), CheckSubmodule)
	if ce.Repo != super || !slices.Equal(ce.Paths, []string{"sub"}) {
		t.Fatalf("CheckError = %+v; want Repo %s, Paths [sub]", ce, super)
	}

	// Staged but not committed is still stale.
	git(t, super, "add", "sub")
	wantCheck(t, check(t, super, "sub/lib.txt"), CheckSubmodule)
}

func TestSubmodulePointerCommittedPasses(t *testing.T) {
	needGit(t)
	super, sub := superWithSub(t)
	wantPass(t, check(t, sub, "lib.txt"))

	write(t, filepath.Join(sub, "lib.txt"), "lib v2\n")
	git(t, sub, "commit", "-q", "-am", "lib v2")
	git(t, sub, "push", "-q", "origin", "HEAD:main")
	git(t, super, "add", "sub")
	git(t, super, "commit", "-q", "-m", "bump sub")

	// The pointer commit is part of the work: unpushed, it fails.
	ce := wantCheck(t, check(t, sub, "lib.txt"), CheckUnpushed)
	if ce.Repo != super {
		t.Fatalf("Repo = %q, want the superproject %q", ce.Repo, super)
	}
	git(t, super, "push", "-q")
	wantPass(t, check(t, sub, "lib.txt"))
	// Untracked content inside the submodule is not a pointer change.
	write(t, filepath.Join(sub, "unclaimed.txt"), "x\n")
	wantPass(t, check(t, super, "sub/lib.txt"))
}

func TestDeletedClaimCommittedPasses(t *testing.T) {
	needGit(t)
	work := newRepo(t, true)
	git(t, work, "rm", "-q", "-r", "dir")
	git(t, work, "commit", "-q", "-m", "drop dir")
	git(t, work, "push", "-q")
	if _, err := os.Stat(filepath.Join(work, "dir")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir still exists: %v", err)
	}
	wantPass(t, check(t, work, filepath.Join(work, "dir", "b.txt"), "dir/gone/deeper.txt"))
}

func TestPathOutsideRepoFails(t *testing.T) {
	needGit(t)
	outside := t.TempDir()
	write(t, filepath.Join(outside, "loose.txt"), "loose\n")
	ce := wantCheck(t, check(t, outside, "loose.txt"), CheckNoRepo)
	if len(ce.Paths) != 1 || ce.Paths[0] != filepath.Join(outside, "loose.txt") {
		t.Fatalf("Paths = %q", ce.Paths)
	}
	// Reported even when other claims are in a clean repository.
	work := newRepo(t, true)
	wantCheck(t, check(t, work, "a.txt", filepath.Join(outside, "loose.txt")), CheckNoRepo)
}

func TestNoPathsNoRepoPasses(t *testing.T) {
	needGit(t)
	wantPass(t, check(t, t.TempDir()))
	wantPass(t, check(t, filepath.Join(t.TempDir(), "removed", "since")))
}

func TestNoPathsInRepoChecksVerifyAndUnpushed(t *testing.T) {
	needGit(t)
	work := newRepo(t, true)
	write(t, filepath.Join(work, "a.txt"), "dirty, but no paths are claimed\n")
	wantPass(t, check(t, filepath.Join(work, "dir")))
	git(t, work, "commit", "-q", "-am", "two")
	wantCheck(t, check(t, work), CheckUnpushed)

	root := t.TempDir()
	git(t, root, "init", "-q", "-b", "main", "empty")
	wantCheck(t, check(t, filepath.Join(root, "empty")), CheckVerify)
}

func TestCorruptRepoFailsVerify(t *testing.T) {
	needGit(t)
	work := newRepo(t, true)
	old := git(t, work, "rev-parse", "HEAD:a.txt")
	write(t, filepath.Join(work, "a.txt"), "two\n")
	git(t, work, "commit", "-q", "-am", "two")
	git(t, work, "push", "-q")
	wantPass(t, check(t, work, "a.txt"))

	// Drop the first version of a.txt: only history refers to it, so
	// status is unaffected and fsck must find it missing.
	obj := filepath.Join(work, ".git", "objects", old[:2], old[2:])
	if err := os.Remove(obj); err != nil {
		t.Fatalf("removing loose object: %v", err)
	}
	ce := wantCheck(t, check(t, work, "a.txt"), CheckVerify)
	if ce.Repo != work || !strings.Contains(ce.Detail, "fsck") {
		t.Fatalf("CheckError = %+v", ce)
	}
}

func TestGitMissingIsGitError(t *testing.T) {
	needGit(t)
	work := newRepo(t, true)
	cfg := Config{Git: "harn-no-such-git-binary"}
	err := Check(context.Background(), cfg, work, []string{"a.txt"})
	var ge *GitError
	if !errors.As(err, &ge) || !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("err = %v (%T); want *GitError wrapping exec.ErrNotFound", err, err)
	}
	if errors.Is(err, ErrFinalization) {
		t.Fatal("an unrunnable git must not read as a failed check")
	}
}

func TestCanceledContext(t *testing.T) {
	needGit(t)
	work := newRepo(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Check(ctx, DefaultConfig(), work, []string{"a.txt"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrFinalization) {
		t.Fatalf("err = %v; want context.Canceled, not ErrFinalization", err)
	}
}

func TestConfig(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	if d := (Config{}).withDefaults(); d != DefaultConfig() {
		t.Fatalf("zero Config defaults to %+v", d)
	}
	bad := Config{Timeout: -time.Second}
	if err := bad.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Validate(negative timeout) = %v", err)
	}
	if err := Check(context.Background(), bad, "", nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Check(bad config) = %v", err)
	}
}

func TestParseStatus(t *testing.T) {
	out := []byte(" M a.txt\x00?? new file.txt\x00R  to.txt\x00from.txt\x00D  gone.txt\x00")
	got := parseStatus(out)
	var desc []string
	for _, e := range got {
		desc = append(desc, e.describe())
	}
	want := []string{"modified a.txt", "untracked new file.txt", "staged to.txt", "staged deletion gone.txt"}
	if !slices.Equal(desc, want) {
		t.Fatalf("parseStatus = %q, want %q", desc, want)
	}
}

func TestCheckErrorOneLine(t *testing.T) {
	err := &CheckError{Check: CheckVerify, Repo: "/r", Detail: "line one\nline two"}
	if msg := err.Error(); strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("Error() = %q spans lines", msg)
	}
	if !errors.Is(err, ErrFinalization) {
		t.Fatal("CheckError does not unwrap to ErrFinalization")
	}
}
