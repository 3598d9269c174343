package localapi

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/harn-dev/harn/node/layout"
)

// EnsureSocketDir makes the socket's directory. The temp-dir fallback
// (PrivateSocketDir) must be a real directory of this user with mode 0700:
// one made first by someone else, or opened to others, is refused.
func EnsureSocketDir(sock string) error {
	dir := filepath.Dir(sock)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("node: socket dir: %w", err)
	}
	if filepath.Clean(dir) != filepath.Clean(layout.PrivateSocketDir()) {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("node: socket dir: %w", err)
	}
	fix := "remove it (it is not harn's) or pass another --socket"
	switch {
	case !fi.IsDir():
		return &layout.SocketError{Path: sock, Why: "lies in " + layout.Quote(dir) + ", which is not a directory", Fix: fix}
	case !layout.OwnedByMe(fi):
		return &layout.SocketError{Path: sock, Why: "lies in " + layout.Quote(dir) + ", " + layout.OwnerWhy(fi), Fix: fix}
	case fi.Mode().Perm() != 0o700:
		return &layout.SocketError{Path: sock, Why: fmt.Sprintf("lies in %s, which others may enter (mode %04o)", layout.Quote(dir), fi.Mode().Perm()),
			Fix: "run chmod 700 " + layout.Quote(dir)}
	}
	return nil
}
