package secretfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSecretFileRefusesGroupOrOtherReadable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	os.WriteFile(p, []byte("secret"), 0o600)
	if err := Check(p); err != nil {
		t.Fatalf("0600: %v", err)
	}
	for _, tc := range []struct {
		mode os.FileMode
		want string
	}{
		{0o644, "is readable by others (mode 0644); run chmod 600 " + p},
		{0o640, "is readable by its group (mode 0640); run chmod 600 " + p},
		{0o604, "is readable by others (mode 0604)"},
		{0o622, "is writable by others (mode 0622)"},
	} {
		os.Chmod(p, tc.mode)
		err := Check(p)
		var ie *InsecureFileError
		if !errors.Is(err, ErrInsecure) || !errors.As(err, &ie) {
			t.Fatalf("mode %o: err %v", tc.mode, err)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("mode %o: message %q, want it to contain %q on one line", tc.mode, msg, tc.want)
		}
	}
}

func TestCheckSecretFileRefusesDirectory(t *testing.T) {
	if err := Check(t.TempDir()); !errors.Is(err, ErrInsecure) {
		t.Fatalf("err %v", err)
	}
}

func TestCheckSecretFileQuotesOddPaths(t *testing.T) {
	p := filepath.Join(t.TempDir(), "my key\x1b[2J")
	os.WriteFile(p, nil, 0o644)
	os.Chmod(p, 0o644)
	msg := Check(p).Error()
	if strings.ContainsRune(msg, 0x1b) || !strings.Contains(msg, "'") {
		t.Fatalf("message %q", msg)
	}
}

func TestEnsurePrivateDirTightensExisting0755(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data")
	sub := filepath.Join(root, "raft", "wal")
	os.MkdirAll(sub, 0o755)
	os.Chmod(root, 0o755)
	files := []string{filepath.Join(root, "ledger.log"), filepath.Join(sub, "000001.log")}
	for _, f := range files {
		os.WriteFile(f, []byte("x"), 0o644)
		os.Chmod(f, 0o644)
	}
	outside := filepath.Join(t.TempDir(), "shared.txt")
	os.WriteFile(outside, []byte("x"), 0o644)
	os.Chmod(outside, 0o644)
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := EnsurePrivateDir(root); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, filepath.Join(root, "raft"), sub} {
		if got := mode(t, d); got != 0o700 {
			t.Errorf("%s: %o, want 700", d, got)
		}
	}
	for _, f := range files {
		if got := mode(t, f); got != 0o600 {
			t.Errorf("%s: %o, want 600", f, got)
		}
	}
	if got := mode(t, outside); got != 0o644 {
		t.Errorf("a symlink was followed: its target is now %o", got)
	}
}

func TestEnsurePrivateDirCreatesMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "b")
	if err := EnsurePrivateDir(p); err != nil {
		t.Fatal(err)
	}
	if mode(t, p) != 0o700 {
		t.Fatal("not 0700")
	}
}
func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}
