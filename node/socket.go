package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/trust"
)

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

// ensureSocketDir makes the socket's directory. The temp-dir fallback
// (PrivateSocketDir) must be a real directory of this user with mode 0700:
// one made first by someone else, or opened to others, is refused.
func ensureSocketDir(sock string) error {
	dir := filepath.Dir(sock)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("node: socket dir: %w", err)
	}
	if filepath.Clean(dir) != filepath.Clean(PrivateSocketDir()) {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("node: socket dir: %w", err)
	}
	fix := "remove it (it is not harn's) or pass another --socket"
	switch {
	case !fi.IsDir():
		return &layout.SocketError{Path: sock, Why: "lies in " + trustQuote(dir) + ", which is not a directory", Fix: fix}
	case !ownedByMe(fi):
		return &layout.SocketError{Path: sock, Why: "lies in " + trustQuote(dir) + ", " + ownerWhy(fi), Fix: fix}
	case fi.Mode().Perm() != 0o700:
		return &layout.SocketError{Path: sock, Why: fmt.Sprintf("lies in %s, which others may enter (mode %04o)", trustQuote(dir), fi.Mode().Perm()),
			Fix: "run chmod 700 " + trustQuote(dir)}
	}
	return nil
}
