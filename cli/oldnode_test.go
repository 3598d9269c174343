package cli

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-dev/harn/cli/hook"
)

// TestANodeWithoutTheLocalWireIsNamed: a node that answers a fresh
// connection's call with HTTP/2 settings and closes it (a harnd from
// before the local wire) is named as such, with the command that starts
// this harn's node, not reported as no node at all.
func TestANodeWithoutTheLocalWireIsNamed(t *testing.T) {
	lis, sock := unixListener(t, "old")
	dir := filepath.Dir(sock)
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 24)
				io.ReadFull(c, b)                                                              // what a gRPC server reads as the client's preface
				c.Write([]byte{0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0x40, 0, 0, 0, 0, 0, 0}) // its SETTINGS
			}()
		}
	}()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "cfg"))
	t.Setenv("HARN_CONFIG", "")
	var stderr bytes.Buffer
	code := Main([]string{"agents", "list", "--data-dir", dir, "--socket", sock}, strings.NewReader(""), io.Discard, &stderr)
	if code != hook.ExitUnavailable || !strings.Contains(stderr.String(), "older than this harn") ||
		!strings.Contains(stderr.String(), "`harn node --data-dir") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// unixListener listens on a socket in a new short temp dir (a unix socket's
// path is bounded), removed at the test's end.
func unixListener(t *testing.T, prefix string) (net.Listener, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	return lis, sock
}
