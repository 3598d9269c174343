package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// preToolUse is Claude Code's PreToolUse payload for a Write.
func preToolUse(sid, root, callID string) string {
	return `{"session_id":"` + sid + `","hook_event_name":"PreToolUse","tool_name":"Write","tool_use_id":"` + callID +
		`","tool_input":{"file_path":"` + root + `/x","content":"y"}}`
}

// permission decodes a PreToolUse hook's answer ("" when it has none).
func permission(t *testing.T, stdout string) (decision, reason string) {
	t.Helper()
	if strings.TrimSpace(stdout) == "" {
		return "", ""
	}
	var out struct {
		H struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	mustJSON(t, stdout, &out)
	return out.H.Decision, out.H.Reason
}

func TestCancelledTaskDeniesTheClaudeSessionsNextCallsAndSaysItCannotInterrupt(t *testing.T) {
	e, _ := taskEnv(t)
	sid := "cc-cancel-1"
	e.hook("claude-code", `{"session_id":"`+sid+`","hook_event_name":"SessionStart","source":"startup","cwd":"`+e.root+`"}`)
	e.hook("claude-code", `{"session_id":"`+sid+`","hook_event_name":"UserPromptSubmit","prompt":"write x","cwd":"`+e.root+`"}`)
	task := e.task("start", "--session", sid, "--profile", "full", "write x")
	if d, _ := permission(t, e.hook("claude-code", preToolUse(sid, e.root, "toolu_a1")).stdout); d == "deny" {
		t.Fatal("a call inside the grants was denied before the cancellation")
	}
	e.hook("claude-code", `{"session_id":"`+sid+`","hook_event_name":"PostToolUse","tool_name":"Write","tool_use_id":"toolu_a1","tool_input":{"file_path":"`+e.root+`/x","content":"y"},"tool_response":{"success":true}}`)

	var cancel struct {
		Interrupt string `json:"interrupt"`
	}
	mustJSON(t, e.ok("task", "cancel", task.Task.ID, "--reason", "wrong repo", "--json"), &cancel)
	if !strings.HasPrefix(cancel.Interrupt, "not possible:") || !strings.Contains(cancel.Interrupt, "refused") {
		t.Fatalf("cancel --json says interrupt %q, want \"not possible: …\" saying further calls are refused", cancel.Interrupt)
	}
	e.waitTask(task.Task.ID, "cancelled")

	// After the barrier the agent's turn goes on: every further call is
	// refused, naming the task and who cancelled it.
	for i := range 2 {
		d, reason := permission(t, e.hook("claude-code", preToolUse(sid, e.root, fmt.Sprintf("toolu_b%d", i))).stdout)
		if d != "deny" {
			t.Fatalf("call %d after the cancellation got %q, want deny", i, d)
		}
		for _, want := range []string{task.Task.ID, "cancelled by ", "wrong repo"} {
			if !strings.Contains(reason, want) {
				t.Fatalf("the denial %q does not name %q", reason, want)
			}
		}
	}

	// The turn ends: the refusal lifts, the session is ungoverned again.
	e.hook("claude-code", `{"session_id":"`+sid+`","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"stopped"}`)
	n := 0
	eventually(t, stateTimeout, "no opinion after the turn ended", func() (bool, string) {
		n++
		d, reason := permission(t, e.hook("claude-code", preToolUse(sid, e.root, fmt.Sprintf("toolu_c%d", n))).stdout)
		return d == "", d + " " + reason
	})

	// A second task, cancelled with the plain output: it says so too.
	e.hook("claude-code", `{"session_id":"`+sid+`","hook_event_name":"UserPromptSubmit","prompt":"again","cwd":"`+e.root+`"}`)
	second := e.task("start", "--session", sid, "--profile", "full", "again")
	out := e.ok("task", "cancel", second.Task.ID)
	if !strings.Contains(out, "interrupt: not possible:") {
		t.Fatalf("cancel output %q does not say the agent cannot be interrupted", out)
	}
	e.waitTask(second.Task.ID, "cancelled")
	if d, reason := permission(t, e.hook("claude-code", preToolUse(sid, e.root, "toolu_d1")).stdout); d != "deny" || !strings.Contains(reason, second.Task.ID) {
		t.Fatalf("after the second cancellation: %q %q, want a deny naming %s", d, reason, second.Task.ID)
	}
}

// TestACancelsRefusalSurvivesANodeRestart: a Claude Code session's harn
// task is cancelled while the agent's turn goes on; the node is killed
// (kill -9) and started again. The agent's next PreToolUse is still
// denied, naming the task, who cancelled it and why; its Stop then lifts
// the refusal, and that lift survives a second restart too.
func TestACancelsRefusalSurvivesANodeRestart(t *testing.T) {
	e := newEnv(t)
	environ := append(append([]string(nil), e.base...), "HARN_TASK_GRACE=1s")
	args := []string{"node", "--data-dir", e.dataDir, "--socket", e.socket}
	n := e.spawn(environ, args...)
	e.waitReady(n)
	sid := "cc-cancel-restart"
	e.hook("claude-code", `{"session_id":"`+sid+`","hook_event_name":"SessionStart","source":"startup","cwd":"`+e.root+`"}`)
	e.hook("claude-code", `{"session_id":"`+sid+`","hook_event_name":"UserPromptSubmit","prompt":"write x","cwd":"`+e.root+`"}`)
	task := e.task("start", "--session", sid, "--profile", "full", "write x")
	e.ok("task", "cancel", task.Task.ID, "--reason", "wrong repo")
	e.waitTask(task.Task.ID, "cancelled")
	if d, _ := permission(t, e.hook("claude-code", preToolUse(sid, e.root, "toolu_r0")).stdout); d != "deny" {
		t.Fatalf("before the restart the call got %q, want deny", d)
	}

	e.kill9(n)
	n = e.spawn(environ, args...)
	e.waitReady(n)
	d, reason := permission(t, e.hook("claude-code", preToolUse(sid, e.root, "toolu_r1")).stdout)
	if d != "deny" {
		t.Fatalf("after a kill -9 and restart the cancelled task's agent got %q (%q), want deny", d, reason)
	}
	for _, want := range []string{task.Task.ID, "cancelled by ", "wrong repo"} {
		if !strings.Contains(reason, want) {
			t.Fatalf("the denial after the restart %q does not name %q", reason, want)
		}
	}

	// The turn ends: the refusal lifts, and stays lifted across a restart.
	e.hook("claude-code", `{"session_id":"`+sid+`","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"stopped"}`)
	k := 0
	eventually(t, stateTimeout, "no opinion after the turn ended", func() (bool, string) {
		k++
		d, reason := permission(t, e.hook("claude-code", preToolUse(sid, e.root, fmt.Sprintf("toolu_s%d", k))).stdout)
		return d == "", d + " " + reason
	})
	e.kill9(n)
	n = e.spawn(environ, args...)
	e.waitReady(n)
	if d, reason := permission(t, e.hook("claude-code", preToolUse(sid, e.root, "toolu_t1")).stdout); d != "" {
		t.Fatalf("a lifted refusal came back after a restart: %q %q", d, reason)
	}
}
