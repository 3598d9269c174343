package safefs

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzResolveStaysInside: whatever the name and whatever a symlink in the
// directory points at, Resolve answers a local path or an error, and a
// read never returns a file from outside.
func FuzzResolveStaysInside(f *testing.F) {
	for _, s := range [][2]string{{"a/b", "../x"}, {"l/../../x", "/etc"}, {"l/l/l", "l"}, {"./l/./", ".."}, {"x/../l", "sub/.."}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, target string) {
		base := t.TempDir()
		repo := filepath.Join(base, "repo")
		if err := os.MkdirAll(filepath.Join(repo, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, "outside"), []byte("OUT"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(repo, "l")); err != nil {
			return // a target the system refuses (a NUL byte)
		}
		d, err := Open(repo)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if got, err := d.Resolve(name); err == nil && !filepath.IsLocal(got) && got != "." {
			t.Fatalf("Resolve(%q) with l -> %q = %q, not local", name, target, got)
		}
		if b, err := d.ReadFile(name, 64); err == nil && string(b) == "OUT" {
			t.Fatalf("ReadFile(%q) with l -> %q read the file outside", name, target)
		}
	})
}
