package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listRows is `harn agents list --json` as generic rows, by session id.
func (e *env) listRows() map[string]map[string]any {
	e.t.Helper()
	var rows []map[string]any
	mustJSON(e.t, e.ok("agents", "list", "--json"), &rows)
	out := map[string]map[string]any{}
	for _, r := range rows {
		id, _ := r["session_id"].(string)
		out[id] = r
	}
	return out
}

func claudeAt(sid, cwd, transcript, rest string) string {
	return `{"session_id":"` + sid + `","transcript_path":"` + transcript + `","cwd":"` + cwd + `",` + rest + `}`
}

// TestSubagentSurfacesOnParentAndSilenceEndToEnd: real processes. A Claude
// Code parent with a SubagentStart child: the child's PermissionRequest
// surfaces on the parent in `agents list --json` (needs_input,
// waiting_child = the child), the child keeps its parent_session_id, and a
// lifecycle command the subagent runs resolves to the subagent and is
// refused. Then an Esc-style silence (a working session that reports
// nothing more, on a node with --silence-after 1s) shows silent_since
// while it stays working.
func TestSubagentSurfacesOnParentAndSilenceEndToEnd(t *testing.T) {
	e := newEnv(t)
	e.startNode("--silence-after", "1s")
	cwd := e.root
	parent, child := "parent-0001", "child-0001"
	e.hook("claude-code", claudeStart(parent, cwd))
	e.hook("claude-code", claudePrompt(parent, cwd))
	e.hook("claude-code", claudeSubStart(parent, cwd, child))
	e.hook("claude-code", `{`+claudeCommon(parent, cwd)+`,"hook_event_name":"PermissionRequest","agent_id":"`+child+
		`","tool_name":"Bash","tool_input":{"command":"rm -rf build","description":"Clean"}}`)
	rows := e.listRows()
	p, c := rows[parent], rows[child]
	if p == nil || c == nil {
		t.Fatalf("rows %v", rows)
	}
	if p["activity"] != "needs_input" || p["waiting_child"] != child {
		t.Fatalf("parent does not show the child's request: %v", p)
	}
	if c["activity"] != "needs_input" || c["parent_session_id"] != parent || c["waiting_child"] != nil {
		t.Fatalf("child row changed: %v", c)
	}
	// The subagent's latest event makes it the caller of a command run
	// from the agent's process (this test process is that agent here).
	r := e.harn("", "agents", "lifecycle", "blocked", "--reason", "waiting for the operator")
	if r.code != 4 || !strings.Contains(r.stderr, "subagent") {
		t.Fatalf("a subagent's lifecycle must be refused (exit 4): %v", r)
	}
	if n := countType(e.trace(parent), "state.task_state"); n != 0 {
		t.Fatalf("the subagent's declaration reached the parent: %d lifecycle events", n)
	}

	silent := "silent-0001"
	e.hook("claude-code", claudeStart(silent, cwd))
	e.hook("claude-code", claudePrompt(silent, cwd))
	eventually(t, stateTimeout, "silent_since on the quiet working session", func() (bool, string) {
		row := e.listRows()[silent]
		return row != nil && row["silent_since"] != nil && row["activity"] == "working", rowJSON(row)
	})
}

func rowJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestRemintStopAsksOnceThenTranscriptEndsPending: real processes. A
// lifecycle change re-mints the name; the Stop hook answers decision
// block with it once (not when stop_hook_active, not a second time);
// each prompt's context reminds the agent; once the transcript shows the
// name in the assistant's words, the pending state ends.
func TestRemintStopAsksOnceThenTranscriptEndsPending(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := e.root
	sid := "remint-0001"
	tr := filepath.Join(e.root, "transcript.jsonl")
	if err := os.WriteFile(tr, []byte(`{"type":"user","message":{"role":"user","content":"go"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.hook("claude-code", claudeAt(sid, cwd, tr, `"hook_event_name":"SessionStart","source":"startup"`))
	e.hook("claude-code", claudeAt(sid, cwd, tr, `"hook_event_name":"UserPromptSubmit","prompt":"fix it"`))
	e.ok("agents", "set-task", "--session", sid, "fix rounding")
	var res struct {
		Session struct {
			SuggestedSessionName string `json:"suggested_session_name"`
		} `json:"session"`
	}
	mustJSON(t, e.ok("agents", "lifecycle", "--json", "--session", sid, "blocked", "--reason", "waiting for access"), &res)
	name := res.Session.SuggestedSessionName
	if !strings.HasPrefix(name, "[BLOCKED] - Agent ") {
		t.Fatalf("suggested name %q", name)
	}
	stop := func(active bool) string {
		a := "false"
		if active {
			a = "true"
		}
		return e.hook("claude-code", claudeAt(sid, cwd, tr, `"hook_event_name":"Stop","stop_hook_active":`+a)).stdout
	}
	out := stop(false)
	var blk struct{ Decision, Reason string }
	if err := json.Unmarshal([]byte(out), &blk); err != nil || blk.Decision != "block" || !strings.Contains(blk.Reason, name) {
		t.Fatalf("first Stop after the re-mint: %q", out)
	}
	if out := stop(true); out != "" {
		t.Fatalf("Stop with stop_hook_active answered %q", out)
	}
	if out := stop(false); out != "" {
		t.Fatalf("a second Stop asked again: %q", out)
	}
	prompt := func() string {
		return e.hook("claude-code", claudeAt(sid, cwd, tr, `"hook_event_name":"UserPromptSubmit","prompt":"go on"`)).stdout
	}
	if out := prompt(); !strings.Contains(out, "harn: show this session name: ") || !strings.Contains(additionalContext(t, out), name) {
		t.Fatalf("no reminder while the name is pending: %q", out)
	}
	asst, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant",
		"content": []any{map[string]any{"type": "text", "text": "Session: " + name}}}})
	f, err := os.OpenFile(tr, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(asst, '\n'))
	f.Close()
	if out := stop(false); out != "" {
		t.Fatalf("Stop after the name was shown answered %q", out)
	}
	var st struct {
		SeenFor string `json:"session_name_seen_for"`
	}
	mustJSON(t, e.ok("agents", "show", sid, "--json"), &st)
	if st.SeenFor != name {
		t.Fatalf("session_name_seen_for %q, want %q", st.SeenFor, name)
	}
	if n := countType(e.trace(sid), "session_name.seen"); n != 1 {
		t.Fatalf("%d session_name.seen events, want 1", n)
	}
	if out := prompt(); strings.Contains(out, "show this session name") {
		t.Fatalf("reminder after the name was seen: %q", out)
	}
}

// TestHookSaysWhatAFailedSpoolLost: with no node and a spool that cannot
// be written, the hook still exits 0 and says on stderr which events of
// which session were lost.
func TestHookSaysWhatAFailedSpoolLost(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(e.dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A file where the spool directory belongs: every spool write fails.
	if err := os.WriteFile(filepath.Join(e.dataDir, "spool"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sid := "lost-0001"
	r := e.hook("claude-code", claudePrompt(sid, e.root), "--timeout", "300ms")
	if !strings.Contains(r.stderr, "spool: not writable: 1 events lost") ||
		!strings.Contains(r.stderr, "lost events of session "+sid+": ") ||
		!strings.Contains(r.stderr, "(user_prompt.submit)") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("stderr does not say what was lost: %q", r.stderr)
	}
}

// TestGeminiGetsPeerContext: Gemini's BeforeAgent hook answers with the
// peer table in hookSpecificOutput.additionalContext.
func TestGeminiGetsPeerContext(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	e.hook("claude-code", claudeStart("peer-0001", e.root))
	e.hook("claude-code", claudePrompt("peer-0001", e.root))
	peerName := e.status("peer-0001").Name
	sid := "gem-00000001"
	now := time.Now()
	start := e.hook("gemini", geminiAt(sid, e.root, "SessionStart", now, `"source":"startup"`)).stdout
	if !strings.Contains(start, `"additionalContext"`) || !strings.Contains(start, "Agent "+peerName) {
		t.Fatalf("Gemini's SessionStart got no peer context naming %s: %q", peerName, start)
	}
	e.hook("claude-code", `{`+claudeCommon("peer-0001", e.root)+`,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"make"}}`)
	out := e.hook("gemini", geminiAt(sid, e.root, "BeforeAgent", now.Add(time.Millisecond), `"prompt":"go"`)).stdout
	if !strings.Contains(out, `"BeforeAgent"`) || !strings.Contains(out, "needs_input") {
		t.Fatalf("Gemini's BeforeAgent got no changed peer context: %q", out)
	}
}
