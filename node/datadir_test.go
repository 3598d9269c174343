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
