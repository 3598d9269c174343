package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// claimRow is a session's claims in `agents list --json`.
type claimRow struct {
	SessionID     string   `json:"session_id"`
	Claims        []string `json:"claims"`
	PendingClaims []string `json:"pending_claims"`
}

func (m *meshNode) claimRow(id string) (claimRow, bool, string) {
	var rows []claimRow
	if ok, why := m.try(&rows, "agents", "list", "--json"); !ok {
		return claimRow{}, false, why
	}
	for _, r := range rows {
		if r.SessionID == id {
			return r, true, ""
		}
	}
	return claimRow{}, false, id + " not listed"
}

func claudePermWrite(sid, cwd, path string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"PermissionRequest","tool_name":"Write","tool_input":{"file_path":"` + path + `","content":"package cart\n"}}`
}

// TestAClaimMadeWithoutALeaderShowsPendingThenLands: with one of two
// servers down the registry has no leader, so a write's claim cannot be
// recorded: the write is allowed and the row lists the claim as pending,
// not held. Once the second server is back the claim lands on its own
// (the node retries it), the row holds it, and the other agent's write to
// that file is denied.
func TestAClaimMadeWithoutALeaderShowsPendingThenLands(t *testing.T) {
	nodes := startServers(t, 2)
	a, b := nodes[0], nodes[1]
	cloneA, cloneB := filepath.Join(a.root, "r"), filepath.Join(b.root, "r")
	gitClone(t, cloneA, "git@example.com:team/r.git")
	gitClone(t, cloneB, "https://example.com/team/r")
	startClaudeSession(a, "sess-a", cloneA)
	startClaudeSession(b, "sess-b", cloneB)
	xa := filepath.Join(cloneA, "pkg", "x.go")

	b.stop()
	eventually(t, meshTimeout, "a has no leader", func() (bool, string) {
		r, ok, why := a.raftState()
		return ok && r.Leader == "", why + r.State
	})
	if r := a.hook("claude-code", claudePreWrite("sess-a", cloneA, xa)); strings.Contains(r.stdout, "deny") {
		t.Fatalf("a write whose claim cannot be recorded was denied: %v", r)
	}
	row, ok, why := a.claimRow("sess-a")
	if !ok || !slices.Contains(row.PendingClaims, xa) || slices.Contains(row.Claims, xa) {
		t.Fatalf("the row shows the unrecorded claim as held, or not as pending: %+v %s", row, why)
	}
	if r := a.ok("agents", "show", "sess-a"); !strings.Contains(r, "pending") {
		t.Errorf("show does not say the claim is pending:\n%s", r)
	}

	b.start()
	eventually(t, meshTimeout, "the claim lands once a leader exists", func() (bool, string) {
		row, ok, why := a.claimRow("sess-a")
		return ok && slices.Contains(row.Claims, xa) && len(row.PendingClaims) == 0, why
	})
	eventually(t, meshTimeout, "b's write to the claimed file is denied", func() (bool, string) {
		r := b.hook("claude-code", claudePreWrite("sess-b", cloneB, filepath.Join(cloneB, "pkg", "x.go")))
		return strings.Contains(r.stdout, `"permissionDecision":"deny"`) && strings.Contains(r.stdout, "sess-a") ||
			strings.Contains(r.stdout, "claimed by"), r.stdout
	})
}

// TestAWriteTheOperatorDeniedReleasesItsClaim: a Write's PreToolUse
// claims its file; the operator then denies the write at its permission
// request, so its PostToolUse never comes. The claim it took is released:
// the row no longer lists it and another session may claim the file.
func TestAWriteTheOperatorDeniedReleasesItsClaim(t *testing.T) {
	m := startServers(t, 1)[0]
	clone := filepath.Join(m.root, "r")
	gitClone(t, clone, "git@example.com:team/r.git")
	x := filepath.Join(clone, "pkg", "x.go")
	startClaudeSession(m, "sess-a", clone)
	startClaudeSession(m, "sess-b", clone)
	if r := m.hook("claude-code", claudePreWrite("sess-a", clone, x)); strings.Contains(r.stdout, "deny") {
		t.Fatalf("a's write was denied: %v", r)
	}
	eventually(t, meshTimeout, "a's claim holds", func() (bool, string) {
		row, ok, why := m.claimRow("sess-a")
		return ok && slices.Contains(row.Claims, x), why
	})
	if r := m.hook("claude-code", claudePreWrite("sess-b", clone, x)); !strings.Contains(r.stdout, `"permissionDecision":"deny"`) {
		t.Fatalf("b's write to a's claimed file was allowed: %v", r)
	}
	ch := make(chan result, 1)
	go func() {
		ch <- run(t, m.hookEnv(), claudePermWrite("sess-a", clone, x), "hook", "claude-code", "--remote-approve", "--approve-wait", "20s")
	}()
	var reqs []struct{ ID, Session string }
	eventually(t, stateTimeout, "the write's request is pending", func() (bool, string) {
		mustJSON(t, m.ok("agents", "pending", "--json"), &reqs)
		return len(reqs) == 1 && reqs[0].Session == "sess-a", m.ok("agents", "pending")
	})
	m.ok("agents", "deny", reqs[0].ID, "--reason", "not that file")
	if r := <-ch; !strings.Contains(r.stdout, `"behavior":"deny"`) {
		t.Fatalf("the hook did not deny: %v", r)
	}
	row, ok, why := m.claimRow("sess-a")
	if !ok || slices.Contains(row.Claims, x) || slices.Contains(row.PendingClaims, x) {
		t.Fatalf("the denied write's claim is still listed: %+v %s", row, why)
	}
	if r := m.hook("claude-code", claudePreWrite("sess-b", clone, x)); strings.Contains(r.stdout, "deny") {
		t.Fatalf("after the denial another session may claim the file: %v", r)
	}
}
