package e2e

import (
	"fmt"
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

func claudeStop(sid, cwd string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"done"}`
}

// TestAPendingClaimSurvivesANodeRestart: a claim that could not be
// recorded (no leader) is kept in the node's ledger: after a kill -9 and a
// restart of its node the row still lists it as pending, and once a
// leader exists it lands and holds against the other agent's write.
func TestAPendingClaimSurvivesANodeRestart(t *testing.T) {
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
	if row, ok, why := a.claimRow("sess-a"); !ok || !slices.Contains(row.PendingClaims, xa) {
		t.Fatalf("the unrecorded claim is not pending: %+v %s", row, why)
	}

	a.kill9()
	a.start()
	if row, ok, why := a.claimRow("sess-a"); !ok || !slices.Contains(row.PendingClaims, xa) || slices.Contains(row.Claims, xa) {
		t.Fatalf("after the restart the claim is not pending: %+v %s", row, why)
	}
	b.start()
	eventually(t, meshTimeout, "the claim lands after the restart once a leader exists", func() (bool, string) {
		row, ok, why := a.claimRow("sess-a")
		return ok && slices.Contains(row.Claims, xa) && len(row.PendingClaims) == 0, why + fmt.Sprintf(" %+v", row)
	})
	eventually(t, meshTimeout, "b's write to the claimed file is denied", func() (bool, string) {
		r := b.hook("claude-code", claudePreWrite("sess-b", cloneB, filepath.Join(cloneB, "pkg", "x.go")))
		return strings.Contains(r.stdout, `"permissionDecision":"deny"`), r.stdout
	})
}

// TestAWriteDeniedInTheAgentsOwnPromptReleasesItsClaim: Claude Code names
// every call by tool_use_id in PreToolUse and PostToolUse. A Write the
// user denies in Claude Code's own prompt gets no PostToolUse; at the
// turn's Stop the claim that call took is released (the row drops it,
// another session may write the file), while the claim of a Write that
// ran (its PostToolUse came) holds.
func TestAWriteDeniedInTheAgentsOwnPromptReleasesItsClaim(t *testing.T) {
	m := startServers(t, 1)[0]
	clone := filepath.Join(m.root, "r")
	gitClone(t, clone, "git@example.com:team/r.git")
	ran, denied := filepath.Join(clone, "pkg", "ran.go"), filepath.Join(clone, "pkg", "denied.go")
	startClaudeSession(m, "sess-a", clone)
	startClaudeSession(m, "sess-b", clone)
	in := func(p string) string { return `{"file_path":"` + p + `","content":"package cart\n"}` }
	m.hook("claude-code", claudePre("sess-a", clone, "Write", in(ran), "toolu_ran"))
	m.hook("claude-code", claudePost("sess-a", clone, "Write", in(ran), "toolu_ran"))
	m.hook("claude-code", claudePre("sess-a", clone, "Write", in(denied), "toolu_denied"))
	eventually(t, meshTimeout, "both claims hold", func() (bool, string) {
		row, ok, why := m.claimRow("sess-a")
		return ok && slices.Contains(row.Claims, ran) && slices.Contains(row.Claims, denied), why + fmt.Sprintf(" %+v", row)
	})
	// The user says no in Claude Code's prompt: no PostToolUse; the turn ends.
	m.hook("claude-code", claudeStop("sess-a", clone))
	row, ok, why := m.claimRow("sess-a")
	if !ok || slices.Contains(row.Claims, denied) || !slices.Contains(row.Claims, ran) {
		t.Fatalf("after Stop the row lists %+v (%s); want %s held and %s released", row, why, ran, denied)
	}
	if r := m.hook("claude-code", claudePre("sess-b", clone, "Write", in(denied), "toolu_b1")); strings.Contains(r.stdout, "deny") {
		t.Fatalf("another session may write the released file: %v", r)
	}
	if r := m.hook("claude-code", claudePre("sess-b", clone, "Write", in(ran), "toolu_b2")); !strings.Contains(r.stdout, `"permissionDecision":"deny"`) {
		t.Fatalf("the file a ran Write claimed is still held against another session: %v", r)
	}
}
