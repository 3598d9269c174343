package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var startHintRe = regexp.MustCompile("start one with `([^`]+)`")

// TestOnlyHooksStartNodes: a read command that finds no node starts none,
// creates no data dir, exits 5, and prints the exact command that starts
// a node there; that command, run as printed, starts a node the read
// command then reaches.
func TestOnlyHooksStartNodes(t *testing.T) {
	e := newEnv(t)
	typo := filepath.Join(e.root, "typo")
	sock := filepath.Join(filepath.Dir(e.socket), "typo.sock")
	var hint string
	for _, args := range [][]string{
		{"agents", "list"}, {"agents", "show", "x"}, {"mesh", "members"}, {"mesh", "raft"},
		{"node", "status"}, {"node", "errors"}, {"task", "show", "t-1"}, {"notify", "list"},
		{"agents", "pending"}, {"token", "list"}, {"web", "url"},
	} {
		r := run(t, e.base, "", append([]string{"--data-dir", typo, "--socket", sock}, args...)...)
		if r.code != 5 {
			t.Errorf("%v: exit %d, want 5 (no node): %s", args, r.code, r.stderr)
		}
		m := startHintRe.FindStringSubmatch(r.stderr)
		if m == nil {
			t.Fatalf("%v: no start hint in %q", args, r.stderr)
		}
		if hint == "" {
			hint = m[1]
		} else if hint != m[1] {
			t.Errorf("%v: hint %q, others said %q", args, m[1], hint)
		}
		if _, err := os.Stat(typo); err == nil {
			t.Fatalf("%v created the data dir %s", args, typo)
		}
		if _, err := os.Stat(sock); err == nil {
			t.Fatalf("%v left a socket", args)
		}
	}
	words := strings.Fields(hint) // the test's paths need no quoting
	if len(words) < 2 || words[0] != "harn" {
		t.Fatalf("hint %q is not a harn command", hint)
	}
	if !strings.Contains(hint, typo) || !strings.Contains(hint, sock) {
		t.Fatalf("hint %q does not name the data dir and socket given", hint)
	}
	// Run the hint as printed (the test's ports and timers come from the
	// environment, as a user's would from their config).
	n := e.spawn(e.base, append(words[1:], "--reap-interval", "200ms")...)
	eventually(t, 20*time.Second, "the hinted node answers", func() (bool, string) {
		r := run(t, e.base, "", "--data-dir", typo, "--socket", sock, "agents", "list", "--json")
		return r.code == 0, r.stderr
	})
	e.stopNode(n)
}
