package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOperationOnAnotherNodesSessionNamesTheOwner: on a two-node mesh, a
// session of node A acted on from node B (lifecycle, set-task, claim)
// is refused with the unknown-session exit code (3) and a line that
// names A as the owner and says to run it there.
func TestOperationOnAnotherNodesSessionNamesTheOwner(t *testing.T) {
	nodes := startServers(t, 2)
	a, b := nodes[0], nodes[1]
	cwd := t.TempDir()
	const sid = "own-a-000001"
	startClaudeSession(a, sid, cwd)
	eventually(t, meshTimeout, "B's roster lists A's session", func() (bool, string) {
		s, ok, out := b.session(false, sid)
		return ok && s.SessionID == sid, out
	})
	for _, args := range [][]string{
		{"agents", "lifecycle", "blocked", "--session", sid, "--reason", "needs review"},
		{"agents", "set-task", "--session", sid, "refactor the parser"},
		{"agents", "claim", "--session", sid, filepath.Join(cwd, "x.go")},
	} {
		r := b.harn("", args...)
		want := "session " + sid + " is on node " + a.name + "; run it there"
		if r.code != 3 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "unknown session") {
			t.Errorf("%s from node B: want exit 3 and %q: %v", strings.Join(args[:2], " "), want, r)
		}
	}
}
