package secretfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadTakesAPrivateFileOfThisUser(t *testing.T) {
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte("  sk-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(p, 64); err != nil || got != "sk-1" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if _, err := Read(p, 3); err == nil || !strings.Contains(err.Error(), "over 3 bytes") {
		t.Fatalf("a file over the bound: %v", err)
	}
}

// TestReadRefusesASymlink: a link to a private file of this user is
// refused too: the path must be the file.
func TestReadRefusesASymlink(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	os.WriteFile(p, []byte("sk-1"), 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	_, err := Read(link, 64)
	var ie *InsecureFileError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "a symlink") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a symlink must be refused on one line: %v", err)
	}
}

func TestReadRefusesAFileOthersMayRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "key")
	os.WriteFile(p, []byte("sk-1"), 0o600)
	os.Chmod(p, 0o640)
	if _, err := Read(p, 64); !errors.Is(err, ErrInsecure) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("mode 0640: %v", err)
	}
}

func TestReadRefusesAFifo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no fifo here:", err)
	}
	if _, err := Read(p, 64); !errors.Is(err, ErrInsecure) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a fifo: %v", err)
	}
}

// TestReadRefusesAnotherUsersFile needs root to give the file away.
func TestReadRefusesAnotherUsersFile(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root, which CI has")
		}
		t.Skip("needs root to chown to another uid (runs in CI)")
	}
	p := filepath.Join(t.TempDir(), "key")
	os.WriteFile(p, []byte("sk-other"), 0o600)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p, 64); !errors.Is(err, ErrInsecure) || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("another user's key file: %v", err)
	}
}
