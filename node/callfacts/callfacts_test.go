package callfacts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// TestOfShowsTheWholeCommandAndWhereItRuns: the command is the agent's
// own, whole (never its program alone), and runs in the payload's cwd, or
// in the directory the call names under it.
func TestOfShowsTheWholeCommandAndWhereItRuns(t *testing.T) {
	f := Of("claude-code", "Bash", []byte(`{"command":"git push --force-with-lease origin main"}`), "/w")
	if f.Command != "git push --force-with-lease origin main" || f.Cwd != "/w" || f.CommandCut || f.Path != "" || f.Diff != "" {
		t.Fatalf("%+v", f)
	}
	f = Of("codex", "Bash", []byte(`{"command":["bash","-lc","make deploy"],"workdir":"svc"}`), "/w")
	if f.Command != "bash -lc 'make deploy'" || f.Cwd != "/w/svc" {
		t.Fatalf("codex: %+v", f)
	}
}

// TestOfBoundsTheCommandAtMaxCommand: a command up to MaxCommand bytes is
// shown whole; one byte more is cut there, and CommandCut says so.
func TestOfBoundsTheCommandAtMaxCommand(t *testing.T) {
	whole := strings.Repeat("a", taskwire.MaxCommand)
	if f := Of("claude-code", "Bash", []byte(`{"command":"`+whole+`"}`), ""); f.Command != whole || f.CommandCut {
		t.Fatalf("a command of exactly the bound: %d bytes, cut %v", len(f.Command), f.CommandCut)
	}
	f := Of("claude-code", "Bash", []byte(`{"command":"`+whole+`b"}`), "")
	if f.Command != whole || !f.CommandCut {
		t.Fatalf("a command over the bound: %d bytes, cut %v", len(f.Command), f.CommandCut)
	}
}

// TestOfStripsControlCharactersAndKeepsLines: escape sequences and CR go;
// a command's lines stay lines.
func TestOfStripsControlCharactersAndKeepsLines(t *testing.T) {
	f := Of("claude-code", "Bash", []byte(`{"command":"echo \u001b[2J<b>hi</b>\r\ngit push --force-with-lease\u009b"}`), "/w\u001b[31m")
	if f.Command != "echo [2J<b>hi</b>\ngit push --force-with-lease" || f.Cwd != "/w[31m" {
		t.Fatalf("%q %q", f.Command, f.Cwd)
	}
}

// TestOfDiffsAWriteFromItsInputAlone: an Edit's diff is its old_string
// against its new_string, never the file on disk (a write to a secret
// file must not show the secret); a Write's is its content.
func TestOfDiffsAWriteFromItsInputAlone(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	if err := os.WriteFile(p, []byte("SECRET-ON-DISK\nx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := Of("claude-code", "Edit", []byte(`{"file_path":"key","old_string":"x","new_string":"y\nz"}`), dir)
	if f.Path != p || !strings.Contains(f.Diff, "\n-x\n+y\n+z") || strings.Contains(f.Diff, "SECRET") {
		t.Fatalf("edit: %+v", f)
	}
	f = Of("claude-code", "Write", []byte(`{"file_path":"`+p+`","content":"new\n"}`), dir)
	if !strings.Contains(f.Diff, "+new") || strings.Contains(f.Diff, "SECRET") {
		t.Fatalf("write: %+v", f)
	}
	f = Of("codex", "apply_patch", []byte(`{"command":["apply_patch","*** Begin Patch\n*** Update File: a.go\n@@\n-a\n+b\n*** End Patch"]}`), dir)
	if f.Path != filepath.Join(dir, "a.go") || !strings.HasPrefix(f.Diff, "*** Begin Patch") {
		t.Fatalf("patch: %+v", f)
	}
}

// TestOfBoundsTheDiffAtMaxDiff: a diff over MaxDiff bytes is cut there
// and DiffCut says so.
func TestOfBoundsTheDiffAtMaxDiff(t *testing.T) {
	big := strings.Repeat("line\\n", taskwire.MaxDiff)
	f := Of("claude-code", "Write", []byte(`{"file_path":"/w/a","content":"`+big+`"}`), "")
	if len(f.Diff) != taskwire.MaxDiff || !f.DiffCut {
		t.Fatalf("diff %d bytes, cut %v", len(f.Diff), f.DiffCut)
	}
	f = Of("claude-code", "Write", []byte(`{"file_path":"/w/a","content":"small"}`), "")
	if f.DiffCut {
		t.Fatal("a small diff is not cut")
	}
}

// TestOfHarnTakesTheLoopsPreview: harn's shell call shows its command in
// the session's directory; a write shows the loop's preview diff.
func TestOfHarnTakesTheLoopsPreview(t *testing.T) {
	f := OfHarn("shell", []byte(`{"command":"git push --force-with-lease"}`), "", "/w")
	if f.Command != "git push --force-with-lease" || f.Cwd != "/w" {
		t.Fatalf("shell: %+v", f)
	}
	f = OfHarn("edit", []byte(`{"path":"a.go","old_string":"a","new_string":"b"}`), "--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-a\n+b\n", "/w")
	if f.Path != "/w/a.go" || !strings.Contains(f.Diff, "-a\n+b") || f.Command != "" {
		t.Fatalf("edit: %+v", f)
	}
	if f := OfHarn("read", []byte(`{"path":"a.go"}`), "", "/w"); f.Path != "" || f.Command != "" {
		t.Fatalf("read: %+v", f)
	}
}
