// Package secretfile is the room of secret files and private
// directories: it refuses a key, token or config file that others may
// read, and keeps a private directory's modes (0700 directories, 0600
// files). Both harn and harnd use it; it imports the standard library only.
package secretfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrInsecure: a secret file or directory is readable by group or others,
// or is not this user's.
var ErrInsecure = errors.New("trust: insecure secret file")

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
		return fmt.Sprintf("trust: %s is %s (mode %04o)", ShellQuote(e.Path), e.Why, e.Mode.Perm())
	}
	return fmt.Sprintf("trust: %s is %s (mode %04o); run %s", ShellQuote(e.Path), e.Why, e.Mode.Perm(), e.Fix)
}

func (e *InsecureFileError) Unwrap() error { return ErrInsecure }

// Check refuses a file holding a secret (a key, a token, a
// config with a key) that group or others may read or write, that is not a
// regular file, or (on unix) that belongs to another user. A symlink is
// followed; the target is checked.
func Check(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("trust: secret file: %w", err)
	}
	return checkInfo(path, fi)
}

// checkInfo is Check's verdict on a file's information.
func checkInfo(path string, fi fs.FileInfo) error {
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
		return &InsecureFileError{Path: path, Mode: fi.Mode(), Why: who, Fix: "chmod 600 " + ShellQuote(path)}
	}
	if why := foreignOwner(fi); why != "" {
		return &InsecureFileError{Path: path, Mode: fi.Mode(), Why: why, Fix: "chown $(id -u) " + ShellQuote(path)}
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

// ShellQuote quotes a path for a command line when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(ClipPath(s), "'", `'\''`) + "'"
}

// ClipPath makes a path safe for a terminal: control bytes become '?'.
func ClipPath(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}
