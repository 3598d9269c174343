package cli

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestHookCommandIsBareHarnWhenPathFindsThisBinary: the installed hook
// command is `harn` when harn on PATH is the installing binary (itself, a
// symlink or a hard link to it), and the absolute path otherwise.
func TestHookCommandIsBareHarnWhenPathFindsThisBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "real", "harn-1.2")
	other := filepath.Join(dir, "other", "harn")
	for _, p := range []string{exe, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "bin", "harn")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	hard := filepath.Join(dir, "hard-harn")
	if err := os.Link(exe, hard); err != nil {
		t.Skip("no hard links:", err)
	}
	found := func(p string) func(string) (string, error) {
		return func(string) (string, error) { return p, nil }
	}
	for _, c := range []struct {
		name string
		look func(string) (string, error)
		want string
	}{
		{"PATH finds a symlink to this binary", found(link), "harn"},
		{"PATH finds this binary", found(exe), "harn"},
		{"PATH finds a hard link to it", found(hard), "harn"},
		{"PATH finds another harn", found(other), exe},
		{"PATH finds nothing", func(string) (string, error) { return "", errors.New("not found") }, exe},
		{"PATH entry vanished", found(filepath.Join(dir, "gone")), exe},
	} {
		if got := hookBinary(exe, c.look); got != c.want {
			t.Errorf("%s: %q; want %q", c.name, got, c.want)
		}
	}
}

// TestHookEntriesRunHarnHookBesideHarn: with harn-hook beside the
// installing harn, the hook entries run it (bare when PATH finds that very
// file, else its absolute path); without one they run harn.
func TestHookEntriesRunHarnHookBesideHarn(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "bin", "harn")
	hook := filepath.Join(dir, "bin", "harn-hook")
	other := filepath.Join(dir, "other", "harn-hook")
	for _, p := range []string{exe, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	none := func(string) (string, error) { return "", errors.New("not found") }
	if got := hookOnlyBinary(exe, none); got != "" {
		t.Fatalf("no harn-hook beside harn: %q, want the hooks to run harn", got)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	found := func(p string) func(string) (string, error) {
		return func(string) (string, error) { return p, nil }
	}
	for _, c := range []struct {
		name string
		look func(string) (string, error)
		want string
	}{
		{"PATH finds this harn-hook", found(hook), "harn-hook"},
		{"PATH finds another harn-hook", found(other), hook},
		{"PATH finds none", none, hook},
	} {
		if got := hookOnlyBinary(exe, c.look); got != c.want {
			t.Errorf("%s: %q; want %q", c.name, got, c.want)
		}
	}
}
