package install

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readHook(t *testing.T, dir, hook string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, hook))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGitInstallKeepsTheUserHookText: the user's hook text stays as it
// was, before harn's region, for the table of hook shapes; uninstall gives
// back the user's bytes; install twice changes nothing.
func TestGitInstallKeepsTheUserHookText(t *testing.T) {
	for _, tc := range []struct{ name, user string }{
		{"sh", "#!/bin/sh\necho hi\n"},
		{"bash no final newline", "#!/usr/bin/env bash\nset -e\nmake lint"},
		{"zsh blank lines", "#!/bin/zsh\n\nrun-checks\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "pre-commit"), []byte(tc.user), 0o755); err != nil {
				t.Fatal(err)
			}
			rep, err := InstallGit(dir, "/opt/harn bin/harn")
			if err != nil || len(rep.Changed) != 3 {
				t.Fatalf("install: %v %+v", err, rep)
			}
			got := readHook(t, dir, "pre-commit")
			if !strings.HasPrefix(got, tc.user) || !strings.Contains(got, `'/opt/harn bin/harn' hook git pre-commit`) {
				t.Fatalf("pre-commit:\n%s", got)
			}
			if rep, err := InstallGit(dir, "/opt/harn bin/harn"); err != nil || len(rep.Changed) != 0 {
				t.Fatalf("a second install changed %v (%v)", rep.Changed, err)
			}
			if _, err := UninstallGit(dir); err != nil {
				t.Fatal(err)
			}
			if got := readHook(t, dir, "pre-commit"); got != tc.user {
				t.Fatalf("after uninstall %q, want %q", got, tc.user)
			}
			if _, err := os.Stat(filepath.Join(dir, "post-commit")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("post-commit harn created is still there: %v", err)
			}
		})
	}
}

// TestGitInstallChainsAHookItCannotAppendTo: a binary, another
// interpreter's script or a shell script ending in exec is kept aside and
// called first; uninstall puts it back.
func TestGitInstallChainsAHookItCannotAppendTo(t *testing.T) {
	for _, user := range []string{"\x7fELF\x02\x01", "#!/usr/bin/env node\nrequire('x')\n", "#!/bin/sh\nexec lefthook run pre-commit \"$@\"\n"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "pre-commit"), []byte(user), 0o755); err != nil {
			t.Fatal(err)
		}
		rep, err := InstallGit(dir, "harn")
		if err != nil || len(rep.Chained) != 1 {
			t.Fatalf("%q: install %v %+v", user, err, rep)
		}
		if got := readHook(t, dir, "pre-commit.harn-chained"); got != user {
			t.Fatalf("kept hook %q, want %q", got, user)
		}
		if got := readHook(t, dir, "pre-commit"); !strings.Contains(got, `"$(dirname "$0")/pre-commit.harn-chained" "$@" || exit $?`) {
			t.Fatalf("the new hook does not call the kept one first:\n%s", got)
		}
		if _, err := UninstallGit(dir); err != nil {
			t.Fatal(err)
		}
		if got := readHook(t, dir, "pre-commit"); got != user {
			t.Fatalf("after uninstall %q, want %q", got, user)
		}
	}
}

// TestGitInstallRefusesABeginWithoutEnd: a hook with harn's begin marker
// and no end is left alone.
func TestGitInstallRefusesABeginWithoutEnd(t *testing.T) {
	dir := t.TempDir()
	broken := "#!/bin/sh\n" + GitBegin + "\nharn hook git pre-commit\n"
	if err := os.WriteFile(filepath.Join(dir, "pre-commit"), []byte(broken), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallGit(dir, "harn"); !errors.Is(err, ErrBadHook) {
		t.Fatalf("install: %v, want ErrBadHook", err)
	}
	if _, err := UninstallGit(dir); !errors.Is(err, ErrBadHook) {
		t.Fatalf("uninstall: %v, want ErrBadHook", err)
	}
	if got := readHook(t, dir, "pre-commit"); got != broken {
		t.Fatalf("the broken hook was changed: %q", got)
	}
}

// FuzzGitHookRoundTrip: for any existing hook text, install then
// uninstall gives back the user's bytes (or refuses without writing).
func FuzzGitHookRoundTrip(f *testing.F) {
	for _, s := range []string{"", "#!/bin/sh\necho hi\n", "#!/bin/bash\n\n\n", "\x00\x01", "#!/bin/sh\n" + GitBegin + "\n", "#!/bin/sh\nexec x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, user string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "pre-commit")
		if user != "" {
			if err := os.WriteFile(path, []byte(user), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := InstallGit(dir, "harn"); err != nil {
			if !errors.Is(err, ErrBadHook) {
				t.Fatalf("install: %v", err)
			}
			if got := readHook(t, dir, "pre-commit"); got != user {
				t.Fatalf("a refused install wrote %q", got)
			}
			return
		}
		if _, err := UninstallGit(dir); err != nil {
			t.Fatalf("uninstall after install: %v", err)
		}
		b, err := os.ReadFile(path)
		if user == "" {
			if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a hook harn created is left: %q", b)
			}
			return
		}
		if string(b) != user {
			t.Fatalf("round trip: %q, want %q", b, user)
		}
	})
}
