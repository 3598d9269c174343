package trust

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/harn-dev/harn/util/secretfile"
)

// The secret file checks live in util/secretfile, where harn (which links
// no trust) reads them too.
type InsecureFileError = secretfile.InsecureFileError

// CheckSecretFile is secretfile.Check.
func CheckSecretFile(path string) error { return secretfile.Check(path) }

// PrivateMode is secretfile.PrivateMode.
func PrivateMode(t fs.FileMode) (fs.FileMode, bool) { return secretfile.PrivateMode(t) }

// EnsurePrivateDir is secretfile.EnsurePrivateDir.
func EnsurePrivateDir(dir string) error { return secretfile.EnsurePrivateDir(dir) }

func shellQuote(s string) string { return secretfile.ShellQuote(s) }

func clipPath(s string) string { return secretfile.ClipPath(s) }

// writeFileAtomic writes data to path with mode 0600: a temporary file in
// the same directory, synced, then renamed over path, then the directory
// synced. A reader sees the old or the new content, never a mix.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("trust: write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("trust: write %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("trust: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("trust: write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
	return nil
}

// readSecretFile checks a secret file's mode and owner, then reads it.
func readSecretFile(path string, max int64) ([]byte, error) {
	if err := CheckSecretFile(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trust: read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("trust: read %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, path, max)
	}
	return b, nil
}
