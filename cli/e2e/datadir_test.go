package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The data dir is the node's own: a symlink in it that leads out of it,
// or a path in it that another uid owns, stops the node at start with
// exit 13 and one line naming the path and the fix.

// startRefused runs `harn node` for e and returns its result: it must end
// by itself (refused at start).
func (e *env) startRefused() result {
	e.t.Helper()
	return e.harn("", "node", "--data-dir", e.dataDir, "--socket", e.socket, "--no-mesh", "--http-port", "0")
}

func wantDataDirRefusal(t *testing.T, r result, path, fix string) {
	t.Helper()
	if r.code != 13 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, fix) {
		t.Fatalf("%v; want exit 13 naming %s and %q", r, path, fix)
	}
	oneLineErr(t, r)
}

// TestDataDirSymlinkOutOfItIsRefused: active/ is a symlink to another
// folder; the node refuses to start and writes nothing there.
func TestDataDirSymlinkOutOfItIsRefused(t *testing.T) {
	e := newEnv(t)
	victim := filepath.Join(e.root, "someone-elses-folder")
	for _, d := range []string{e.dataDir, victim} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	active := filepath.Join(e.dataDir, "active")
	if err := os.Symlink(victim, active); err != nil {
		t.Fatal(err)
	}
	wantDataDirRefusal(t, e.startRefused(), active, "remove the symlink")
	// A hook still exits 0 (it spools), and the node it starts refuses too.
	e.hook("claude-code", claudeStart("datadir-link-1", t.TempDir()))
	// The node the hook started runs in the background: wait for its
	// refusal in node.log before the symlink changes under it.
	logPath := filepath.Join(e.dataDir, "node.log")
	for deadline := time.Now().Add(stateTimeout); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "remove the symlink") {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the node the hook started did not refuse the symlinked data dir; node.log:\n%s", b)
		}
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Fatalf("the node wrote %d entries into the symlink's target", len(ents))
	}
	// A dangling one is refused as well; a symlink that stays inside is
	// no problem.
	os.Remove(active)
	if err := os.Symlink(filepath.Join(e.root, "nowhere"), active); err != nil {
		t.Fatal(err)
	}
	wantDataDirRefusal(t, e.startRefused(), active, "remove the symlink")
	os.Remove(active)
	if err := os.MkdirAll(filepath.Join(e.dataDir, "elsewhere"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.dataDir, "elsewhere"), filepath.Join(e.dataDir, "inside")); err != nil {
		t.Fatal(err)
	}
	e.startNode("--no-mesh")
}

// TestDataDirOwnedByAnotherUidIsRefused: as root, a data dir chowned to
// another uid, and then a spool/ in it, each stop the node at start.
func TestDataDirOwnedByAnotherUidIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root, which CI has")
		}
		t.Skip("needs root to chown to another uid (runs in CI)")
	}
	const other = 65534 // nobody
	e := newEnv(t)
	spool := filepath.Join(e.dataDir, "spool")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(e.dataDir, other, other); err != nil {
		t.Fatal(err)
	}
	wantDataDirRefusal(t, e.startRefused(), e.dataDir, "chown it")
	if err := os.Chown(e.dataDir, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(spool, other, other); err != nil {
		t.Fatal(err)
	}
	wantDataDirRefusal(t, e.startRefused(), spool, "chown it to uid 0")
	if err := os.Chown(spool, 0, 0); err != nil {
		t.Fatal(err)
	}
	e.startNode("--no-mesh")
}
