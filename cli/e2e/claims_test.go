package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitClone(t *testing.T, dir, origin string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", dir}, {"-C", dir, "remote", "add", "origin", origin}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestClaimHeldOnOneNodeDeniesTheWriteOnAnother: a session on A writes
// pkg/x.go of repository R (claimed through Raft); a session on B, in
// another clone of R (over https where A's is over ssh), is denied an
// Edit of pkg/x.go with the holder named, and allowed pkg/y.go. Once A's
// session ends, its claims end and B's edit is allowed.
func TestClaimHeldOnOneNodeDeniesTheWriteOnAnother(t *testing.T) {
	nodes := startServers(t, 2)
	a, b := nodes[0], nodes[1]
	cloneA, cloneB := filepath.Join(a.root, "r"), filepath.Join(b.root, "r")
	gitClone(t, cloneA, "git@example.com:team/r.git")
	gitClone(t, cloneB, "https://example.com/team/r")

	startClaudeSession(a, "sess-a", cloneA)
	if r := a.hook("claude-code", claudePreWrite("sess-a", cloneA, filepath.Join(cloneA, "pkg", "x.go"))); strings.Contains(r.stdout, "deny") {
		t.Fatalf("A's first write was denied: %v", r)
	}
	if errs := a.ok("node", "errors"); strings.Contains(errs, "claim") || strings.Contains(errs, "pre-call check") {
		t.Fatalf("A's claim was not recorded in time:\n%s", errs)
	}
	startClaudeSession(b, "sess-b", cloneB)
	var r result
	eventually(t, meshTimeout, "B denied pkg/x.go", func() (bool, string) {
		r = b.hook("claude-code", claudePreWrite("sess-b", cloneB, filepath.Join(cloneB, "pkg", "x.go")))
		return strings.Contains(r.stdout, `"permissionDecision":"deny"`), r.stdout
	})
	for _, want := range []string{"pkg/x.go", "claude-code", "on node " + a.name, "release-claim --session sess-a", "example.com/team/r"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the denial lacks %q: %s", want, r.stdout)
		}
	}
	if r := b.hook("claude-code", claudePreWrite("sess-b", cloneB, filepath.Join(cloneB, "pkg", "y.go"))); strings.Contains(r.stdout, "deny") {
		t.Fatalf("B's write to pkg/y.go was denied: %v", r)
	}
	// A's session ends: its claims end with it.
	a.hook("claude-code", `{`+claudeCommon("sess-a", cloneA)+`,"hook_event_name":"SessionEnd","reason":"exit"}`)
	eventually(t, meshTimeout, "B allowed pkg/x.go after A's session ended", func() (bool, string) {
		r = b.hook("claude-code", claudePreWrite("sess-b", cloneB, filepath.Join(cloneB, "pkg", "x.go")))
		return !strings.Contains(r.stdout, "deny"), r.stdout
	})
	// Now B holds it: A's new session (on the ssh clone) is denied.
	startClaudeSession(a, "sess-a2", cloneA)
	eventually(t, meshTimeout, "A's new session denied pkg/x.go", func() (bool, string) {
		r = a.hook("claude-code", claudePreWrite("sess-a2", cloneA, filepath.Join(cloneA, "pkg", "x.go")))
		return strings.Contains(r.stdout, "deny") && strings.Contains(r.stdout, "sess-b"), r.stdout
	})
}
