package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// Where the local socket lives, and the checks that keep another local
// user from standing in for the node: the node serves only from a private
// directory, and a client sends nothing to a socket (or a peer) that is not
// its own user's.

// ErrSocketPermission is wrapped by every *SocketError: a socket that is
// not this user's, or that refuses this user.
var ErrSocketPermission = errors.New("node: socket permission problem")

// SocketError says why a client or the node refuses a socket path or its
// directory, and how to fix it, in one line.
type SocketError struct {
	Path string
	Why  string // "is owned by uid 65534, not by you (uid 1000)"
	Fix  string
	Err  error // the cause (EACCES), or nil
}

func (e *SocketError) Error() string {
	msg := fmt.Sprintf("node: the socket %s %s", Quote(e.Path), e.Why)
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

// Unwrap returns ErrSocketPermission and the cause.
func (e *SocketError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrSocketPermission}
	}
	return []error{ErrSocketPermission, e.Err}
}

// PrivateSocketDir is the directory of the socket fallback in the temp
// dir: $TMPDIR/harn-<uid>, mode 0700, owned by this user.
func PrivateSocketDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("harn-%d", os.Getuid()))
}

// CheckSocket is what a client does before it connects: the socket path,
// when it exists, must not be a symlink and must belong to this user. A
// path that does not exist is no error (nothing answers there). A path the
// user may not even look at is a permission problem.
func CheckSocket(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, fs.ErrPermission):
		return &SocketError{Path: path, Why: "cannot be reached by you (permission denied)",
			Fix: "run harn as the user who runs the node, or fix the modes of the socket's directories", Err: err}
	case err != nil:
		return fmt.Errorf("node: socket %s: %w", Quote(path), err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return &SocketError{Path: path, Why: "is a symlink; harn does not follow it",
			Fix: "pass the socket's real path with --socket"}
	case !OwnedByMe(fi):
		return &SocketError{Path: path, Why: OwnerWhy(fi) + "; harn sends nothing to it",
			Fix: "remove it if it is not yours, or pass your node's --socket"}
	}
	return nil
}

// DialPermission turns a connect error that means "you may not" (EACCES,
// EPERM) into a *SocketError; other errors come back as they are.
func DialPermission(path string, err error) error {
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		return &SocketError{Path: path, Why: "refuses you (permission denied)",
			Fix: "run harn as the user who runs the node, or fix the socket's mode", Err: err}
	}
	return err
}

// CheckPeer checks, on a connected unix socket and before anything is
// sent, that the process at the other end runs as this user (where the
// system tells: SO_PEERCRED, LOCAL_PEERCRED).
func CheckPeer(path string, c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	uid, known, err := PeerUID(uc)
	if err != nil {
		return fmt.Errorf("node: socket %s: peer credentials: %w", Quote(path), err)
	}
	if known && uid != os.Getuid() {
		return &SocketError{Path: path, Why: fmt.Sprintf("is served by uid %d, not by you (uid %d); harn sends nothing to it", uid, os.Getuid()),
			Fix: "stop that process or pass your node's --socket"}
	}
	return nil
}

// OwnedByMe reports whether fi belongs to this process's user.
func OwnedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Getuid()
}

// OwnerWhy says, for a message, who owns fi.
func OwnerWhy(fi fs.FileInfo) string {
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return "belongs to another user"
	}
	return fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, os.Getuid())
}

// Quote renders a path for a one-line message: control characters
// become '?'.
func Quote(p string) string {
	b := []byte(p)
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}
