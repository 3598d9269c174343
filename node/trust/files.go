package trust

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// InsecureFileError is a secret file or directory that others may read. Its
// message is one line that says how to fix it, as ssh's does.
type InsecureFileError struct {
	Path string
	Mode fs.FileMode
	Why  string // "readable by others", "not a regular file", "owned by uid 1001"
	Fix  string // the command that fixes it, or ""
}

func (e *InsecureFileError) Error() string {
	if e.Fix == "" {
		return fmt.Sprintf("trust: %s is %s (mode %04o)", shellQuote(e.Path), e.Why, e.Mode.Perm())
	}
	return fmt.Sprintf("trust: %s is %s (mode %04o); run %s", shellQuote(e.Path), e.Why, e.Mode.Perm(), e.Fix)
}

func (e *InsecureFileError) Unwrap() error { return ErrInsecureFile }

// CheckSecretFile refuses a file holding a secret (a key, a token, a
// config with a key) that group or others may read or write, that is not a
// regular file, or (on unix) that belongs to another user. A symlink is
// followed; the target is checked.
func CheckSecretFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("trust: secret file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return &InsecureFileError{Path: path, Mode: fi.Mode(), Why: "not a regular file"}
	}
	if p := fi.Mode().Perm(); p&0o077 != 0 {
		who := "readable by others"
		switch {
		case p&0o044 == 0:
			who = "writable by others"
		case p&0o004 == 0:
			who = "readable by its group"
		}
		return &InsecureFileError{Path: path, Mode: fi.Mode(), Why: who, Fix: "chmod 600 " + shellQuote(path)}
	}
	if why := foreignOwner(fi); why != "" {
		return &InsecureFileError{Path: path, Mode: fi.Mode(), Why: why, Fix: "chown $(id -u) " + shellQuote(path)}
	}
	return nil
}

// PrivateMode is the mode a private directory keeps for an entry of type
// t: 0700 for a directory, 0600 for a file or a socket; ok is false for
// anything else (symlinks, fifos, devices), which is left as it is.
func PrivateMode(t fs.FileMode) (want fs.FileMode, ok bool) {
	switch {
	case t&fs.ModeSymlink != 0:
		return 0, false
	case t.IsDir():
		return 0o700, true
	case t.IsRegular() || t&fs.ModeSocket != 0:
		return 0o600, true
	}
	return 0, false
}

// EnsurePrivateDir creates dir (and its parents) or tightens it: dir and
// every directory under it become 0700, every regular file and socket
// 0600. Symlinks are not followed and not changed; dir itself may be a
// symlink to a directory.
func EnsurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("trust: private dir: %w", err)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("trust: private dir: %w", err)
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return fmt.Errorf("trust: private dir: %w", err)
		}
		want, ok := PrivateMode(d.Type())
		if !ok {
			return nil // symlinks, fifos, devices: not ours to change
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("trust: private dir: %w", err)
		}
		if fi.Mode().Perm() == want {
			return nil
		}
		if err := os.Chmod(path, want); err != nil {
			return fmt.Errorf("trust: private dir: %w", err)
		}
		return nil
	})
}

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

// shellQuote quotes a path for a command line when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(clipPath(s), "'", `'\''`) + "'"
}

// clipPath makes a path safe for a terminal: control bytes become '?'.
func clipPath(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}
