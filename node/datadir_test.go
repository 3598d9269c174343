package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDataDirWithASymlinkOutOfItIsRefused(t *testing.T) {
	root := t.TempDir()
	dir, out := filepath.Join(root, "data"), filepath.Join(root, "out")
	for _, d := range []string{filepath.Join(dir, "ledger"), out} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkDataDir(dir); err != nil {
		t.Fatalf("a clean data dir: %v", err)
	}
	for _, name := range []string{"active", "tls", "http.token", filepath.Join("ledger", "MANIFEST-000001")} {
		p := filepath.Join(dir, name)
		if err := os.Symlink(out, p); err != nil {
			t.Fatal(err)
		}
		err := checkDataDir(dir)
		var de *DataDirError
		if !errors.As(err, &de) || !errors.Is(err, ErrDataDirUnsafe) || de.Path != p || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s a symlink out: %v", name, err)
		}
		if err := privateDataDir(dir); !errors.Is(err, ErrDataDirUnsafe) {
			t.Fatalf("privateDataDir with %s a symlink out: %v", name, err)
		}
		os.Remove(p)
	}
	// The data dir itself may be a symlink to a directory of this user.
	link := filepath.Join(root, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := checkDataDir(link); err != nil {
		t.Fatalf("a symlinked data dir: %v", err)
	}
}

// TestPrivateDataDirTightensWhatItChecks: the one walk that checks an
// existing data dir also sets its directories to 0700 and its files to
// 0600, the data dir itself included.
func TestPrivateDataDirTightensWhatItChecks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	sub := filepath.Join(dir, "active")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(sub, "s1.json")
	if err := os.WriteFile(f, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := privateDataDir(dir); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, sub: 0o700, f: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}
}
