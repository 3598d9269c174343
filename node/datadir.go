package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/harn-dev/harn/node/trust"
)

// The data dir is the node's own. Before it tightens the modes or opens
// anything, the node refuses a data dir that another uid owns, any path in
// it that another uid owns, and any symlink in it that leads out of it (or
// nowhere): a symlinked active/ would have the node write heartbeats, as
// its user, into someone else's folder, and a data dir of another user
// would be one that user can rewrite under the node.

// ErrDataDirUnsafe is the sentinel under a refused data dir (a
// *DataDirError).
var ErrDataDirUnsafe = errors.New("node: the data dir is not this user's own")

// DataDirError is a path of the data dir the node will not use: the path,
// what is wrong with it, and the fix. Its text is one line.
type DataDirError struct {
	Path, Why, Fix string
}

func (e *DataDirError) Error() string {
	return fmt.Sprintf("node: data dir: %s %s; %s", trustQuote(e.Path), e.Why, e.Fix)
}

// Unwrap makes a DataDirError match ErrDataDirUnsafe.
func (e *DataDirError) Unwrap() error { return ErrDataDirUnsafe }

// checkDataDir checks dir, when it exists, and everything in it. The data
// dir itself may be a symlink to a directory of this user.
func checkDataDir(dir string) error { return walkDataDir(dir, false) }

// walkDataDir is checkDataDir; with tighten it also sets, in the same walk,
// each directory it passed to 0700 and each file or socket to 0600 (what
// trust.EnsurePrivateDir does), so that a restart over a data dir of many
// files reads it once, not twice.
func walkDataDir(dir string, tighten bool) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil // the node creates it
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return &DataDirError{Path: dir, Why: "cannot be resolved (" + errText(err) + ")", Fix: "pass an existing directory of yours with --data-dir"}
	}
	fi, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("node: data dir %s: %w", trustQuote(dir), err)
	}
	if !fi.IsDir() {
		return &DataDirError{Path: dir, Why: "is not a directory", Fix: "pass a directory with --data-dir"}
	}
	if !ownedByMe(fi) {
		return &DataDirError{Path: dir, Why: ownerWhy(fi),
			Fix: "give the node a data dir of its own user (--data-dir), or chown it to that user"}
	}
	if tighten {
		if err := tightenMode(root, fi); err != nil {
			return err
		}
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking (Pebble's obsolete files)
			}
			return fmt.Errorf("node: data dir: %w", err)
		}
		if path == root {
			return nil
		}
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("node: data dir: %w", err)
		}
		shown := filepath.Join(dir, strings.TrimPrefix(path, root+string(filepath.Separator)))
		if !ownedByMe(fi) {
			return &DataDirError{Path: shown, Why: ownerWhy(fi),
				Fix: fmt.Sprintf("remove it or chown it to uid %d (the node creates what it needs)", os.Getuid())}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if tighten {
				return tightenMode(path, fi)
			}
			return nil
		}
		target, terr := filepath.EvalSymlinks(path)
		if terr != nil {
			return &DataDirError{Path: shown, Why: "is a symlink that leads nowhere", Fix: "remove the symlink (the node creates what it needs)"}
		}
		if !within(root, target) {
			return &DataDirError{Path: shown, Why: "is a symlink to " + trustQuote(target) + ", out of the data dir",
				Fix: "remove the symlink (the node creates what it needs)"}
		}
		return nil
	})
}

// tightenMode gives path the mode trust.PrivateMode names for it.
func tightenMode(path string, fi fs.FileInfo) error {
	want, ok := trust.PrivateMode(fi.Mode().Type())
	if !ok || fi.Mode().Perm() == want {
		return nil
	}
	if err := os.Chmod(path, want); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("node: data dir: %w", err)
	}
	return nil
}

// within reports whether path is root or lies under it (both resolved).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// privateDataDir checks the data dir and tightens it in one walk
// (walkDataDir), or creates it, then the directories the node keeps in it:
// every directory 0700, every file 0600.
func privateDataDir(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := trust.EnsurePrivateDir(dir); err != nil {
			return fmt.Errorf("node: data dir %s: %w", dir, err)
		}
	} else if err := walkDataDir(dir, true); err != nil {
		return err
	}
	for _, d := range []string{ActiveDir(dir), SpoolDir(dir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("node: create %s: %w", d, err)
		}
	}
	return nil
}
