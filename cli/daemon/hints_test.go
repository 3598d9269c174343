package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/layout"
)

// TestStartHintsReachTheNode: the commands a node's start prints reach
// that node from any shell: bare on the default data dir (with the hook
// install first), with --data-dir (and the environment agents need) on
// another.
func TestStartHintsReachTheNode(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	def, _ := filepath.Abs(layout.DefaultDataDir())
	h := hintsFor("harn", def, layout.DefaultSocket(def))
	if strings.Join(h.Next, ";") != "harn hook install claude-code;harn agents list" || h.WebURL != "harn web url" || h.Env != "" {
		t.Errorf("default place: %+v", h)
	}
	other := filepath.Join(t.TempDir(), "a b")
	h = hintsFor("/opt/harn/bin/harn", other, layout.DefaultSocket(other))
	q := "'" + other + "'"
	if strings.Join(h.Next, ";") != "/opt/harn/bin/harn agents list --data-dir "+q ||
		h.WebURL != "/opt/harn/bin/harn web url --data-dir "+q || h.Env != "HARN_DATA_DIR="+q {
		t.Errorf("another data dir: %+v", h)
	}
	h = hintsFor("harn", def, "/tmp/s.sock")
	if strings.Join(h.Next, ";") != "harn agents list --socket /tmp/s.sock" || h.Env != "HARN_SOCKET=/tmp/s.sock" {
		t.Errorf("another socket: %+v", h)
	}
}

// TestStartHintsNameTheHarnAShellFinds: a hint names harn bare when PATH
// finds the harn beside the daemon or a copy with its bytes (make
// install), else that harn by its absolute path.
func TestStartHintsNameTheHarnAShellFinds(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	write := func(p, s string) string {
		if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exe := write(filepath.Join(dir, "harnd"), "daemon")
	beside := write(filepath.Join(dir, "harn"), "client build 1")
	found := func(p string) func(string) (string, error) {
		return func(string) (string, error) { return p, nil }
	}
	notFound := func(string) (string, error) { return "", errors.New("not found") }
	if got := harnCommand(exe, found(beside)); got != "harn" {
		t.Errorf("PATH finds the harn beside: %q, want harn", got)
	}
	cp := write(filepath.Join(other, "harn"), "client build 1")
	if got := harnCommand(exe, found(cp)); got != "harn" {
		t.Errorf("PATH finds a copy of it: %q, want harn", got)
	}
	write(cp, "client build 2")
	if got := harnCommand(exe, found(cp)); got != beside {
		t.Errorf("PATH finds another build: %q, want %s", got, beside)
	}
	write(cp, "client build 12")
	if got := harnCommand(exe, found(cp)); got != beside {
		t.Errorf("PATH finds another build of another size: %q, want %s", got, beside)
	}
	if got := harnCommand(exe, notFound); got != beside {
		t.Errorf("no harn on PATH: %q, want %s", got, beside)
	}
	if got := harnCommand(filepath.Join(other, "nothing", "harnd"), notFound); got != "harn" {
		t.Errorf("no harn beside: %q, want harn", got)
	}
}
