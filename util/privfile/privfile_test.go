package privfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteIsPrivateWhateverTheUmask: the file is 0600 even under a
// permissive umask, and holds the content whole.
func TestWriteIsPrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "token")
	if err := Write(p, "secret\n"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(p); string(b) != "secret\n" {
		t.Fatalf("content %q", b)
	}
}
