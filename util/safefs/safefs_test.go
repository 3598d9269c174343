package safefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestASymlinkOutOfTheDirectoryIsNotFollowed: AGENTS.md -> a secret
// outside, or -> /proc/self/environ, or a folder on the way that leads
// out, is refused; a link that stays inside is read.
func TestASymlinkOutOfTheDirectoryIsNotFollowed(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	write(t, filepath.Join(base, "secret"), "PRIVATE KEY")
	write(t, filepath.Join(repo, "docs", "agents.md"), "the rules")
	link(t, filepath.Join(base, "secret"), filepath.Join(repo, "AGENTS.md"))
	link(t, "../secret", filepath.Join(repo, "CLAUDE.md"))
	link(t, "/proc/self/environ", filepath.Join(repo, "GEMINI.md"))
	link(t, "..", filepath.Join(repo, ".harn"))
	link(t, "docs/agents.md", filepath.Join(repo, "INSIDE.md"))
	link(t, filepath.Join(repo, "docs", "agents.md"), filepath.Join(repo, "ABS-INSIDE.md"))
	d := open(t, repo)
	for _, name := range []string{"AGENTS.md", "CLAUDE.md", "GEMINI.md", ".harn/secret", "../secret", "docs/../../secret", "/etc/passwd"} {
		b, err := d.ReadFile(name, 1<<20)
		if !errors.Is(err, ErrOutside) || len(b) != 0 {
			t.Errorf("%s: %q, %v; want ErrOutside", name, b, err)
		}
	}
	for _, name := range []string{"INSIDE.md", "ABS-INSIDE.md", "docs/./agents.md"} {
		if b, err := d.ReadFile(name, 1<<20); err != nil || string(b) != "the rules" {
			t.Errorf("%s: %q, %v; want the rules", name, b, err)
		}
	}
	if _, err := d.ReadFile("nothing.md", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v; want fs.ErrNotExist", err)
	}
}

func TestAHardLinkedFileIsRefused(t *testing.T) {
	base := t.TempDir()
	write(t, filepath.Join(base, "secret"), "PRIVATE KEY")
	repo := filepath.Join(base, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(base, "secret"), filepath.Join(repo, "AGENTS.md")); err != nil {
		t.Skip("no hard links here:", err)
	}
	if b, err := ReadFile(repo, "AGENTS.md", 1<<20); !errors.Is(err, ErrLinked) || len(b) != 0 {
		t.Fatalf("%q, %v; want ErrLinked", b, err)
	}
}

func TestAFIFOIsRefusedWithoutBlocking(t *testing.T) {
	repo := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(repo, "AGENTS.md"), 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, err := ReadFile(repo, "AGENTS.md", 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("%v; want ErrNotRegular", err)
	}
}

// TestAFileOverTheBoundIsRefused: max bytes read, max+1 refused.
func TestAFileOverTheBoundIsRefused(t *testing.T) {
	repo := t.TempDir()
	write(t, filepath.Join(repo, "a"), strings.Repeat("x", 100))
	if b, err := ReadFile(repo, "a", 100); err != nil || len(b) != 100 {
		t.Fatalf("at the bound: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile(repo, "a", 99); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the bound: %v; want ErrTooLarge", err)
	}
	if b, err := open(t, repo).ReadHead("a", 10); err != nil || len(b) != 10 {
		t.Fatalf("ReadHead: %d bytes, %v; want the first 10", len(b), err)
	}
}

// TestTheDataDirIsNeverRead: with the data dir denied, a link to a file
// in it is refused even when the data dir lies inside the directory, and
// so is a directory inside it; undo lifts it.
func TestTheDataDirIsNeverRead(t *testing.T) {
	home := t.TempDir()
	data := filepath.Join(home, ".local", "state", "harn")
	write(t, filepath.Join(data, "tls", "node.pem"), "PRIVATE KEY")
	link(t, ".local/state/harn/tls/node.pem", filepath.Join(home, "CLAUDE.md"))
	undo := Deny(data)
	d := open(t, home)
	if b, err := d.ReadFile("CLAUDE.md", 1<<20); !errors.Is(err, ErrDenied) || len(b) != 0 {
		t.Fatalf("a link into the data dir: %q, %v; want ErrDenied", b, err)
	}
	if _, err := d.ReadDir(".local/state/harn/tls"); !errors.Is(err, ErrDenied) {
		t.Fatalf("a listing of the data dir: %v; want ErrDenied", err)
	}
	if _, err := Open(filepath.Join(data, "tls")); !errors.Is(err, ErrDenied) {
		t.Fatalf("opening a folder of the data dir: %v; want ErrDenied", err)
	}
	undo()
	undo()
	if b, err := d.ReadFile("CLAUDE.md", 1<<20); err != nil || string(b) != "PRIVATE KEY" {
		t.Fatalf("after undo: %q, %v", b, err)
	}
}

// TestResolveFollowsLinksInsideAndKeepsMissingParts: the path a write
// reaches, through a folder symlinked inside the directory.
func TestResolveFollowsLinksInsideAndKeepsMissingParts(t *testing.T) {
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	link(t, ".git/hooks", filepath.Join(repo, "tools"))
	link(t, "loop", filepath.Join(repo, "loop"))
	d := open(t, repo)
	cases := map[string]string{
		"tools/pre-commit":       filepath.Join(".git", "hooks", "pre-commit"),
		"new/dir/file":           filepath.Join("new", "dir", "file"),
		"new/../tools/x":         filepath.Join(".git", "hooks", "x"),
		".":                      ".",
		"tools/../../tools/a/..": filepath.Join(".git", "hooks"),
	}
	for in, want := range cases {
		if got, err := d.Resolve(in); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := d.Resolve("loop/x"); !errors.Is(err, ErrOutside) {
		t.Errorf("a symlink loop: %v; want ErrOutside", err)
	}
	ents, err := d.ReadDir(".")
	if err != nil || len(ents) != 3 || ents[0].Name() != ".git" || ents[1].Name() != "loop" {
		t.Fatalf("ReadDir: %v %v", ents, err)
	}
}
