package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Realistic native hook payloads, after the adapters' own tests
// (presence/adapter/*/*_test.go), parameterised by session id and cwd.

// step is one native hook invocation and what must hold after it.
type step struct {
	name    string
	payload func() string // stdin (built at run time: Gemini stamps it)
	args    []string      // extra argv (codex-notify's JSON)

	activity string   // activity after the step
	source   string   // activity_source after the step: the event that began the current activity (repeated evidence does not move it)
	types    []string // canonical event types the step adds, in order
	ended    bool
}

func fixed(s string) func() string { return func() string { return s } }

func claudeCommon(sid, cwd string) string {
	return fmt.Sprintf(`"session_id":%q,"transcript_path":"/home/ana/.claude/projects/-home-ana-shop/%s.jsonl","cwd":%q,"permission_mode":"default"`, sid, sid, cwd)
}

func claudeStart(sid, cwd string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"SessionStart","source":"startup","model":"claude-sonnet-4-6"}`
}

func claudePrompt(sid, cwd string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"UserPromptSubmit","prompt":"fix the checkout total rounding"}`
}

// claudePreBash is a PreToolUse of Bash; marker makes the call unique.
func claudePreBash(sid, cwd, marker string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./... # ` + marker + `","description":"Run the tests"},"tool_use_id":"toolu_` + marker + `"}`
}

func claudePreWrite(sid, cwd, path string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"` + path + `","content":"package cart\n"},"tool_use_id":"toolu_02"}`
}

func claudeSubStart(sid, cwd, child string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"SubagentStart","agent_id":"` + child + `","agent_type":"Explore"}`
}

// claudeSteps is a full Claude Code session: the permission request is
// for the call PreToolUse announced, and PostToolUse reports that call
// (its tool_input keys reordered, as Claude sends them).
func claudeSteps(sid, cwd string) []step {
	c := claudeCommon(sid, cwd)
	return []step{
		{name: "SessionStart", payload: fixed(claudeStart(sid, cwd)),
			activity: "idle", source: "session.start", types: []string{"session.start"}},
		{name: "UserPromptSubmit", payload: fixed(claudePrompt(sid, cwd)),
			activity: "working", source: "user_prompt.submit", types: []string{"user_prompt.submit"}},
		{name: "PreToolUse", payload: fixed(`{` + c + `,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf build","description":"Clean the build"},"tool_use_id":"toolu_06"}`),
			activity: "working", source: "user_prompt.submit", types: []string{"tool.pre_use"}},
		{name: "PermissionRequest", payload: fixed(`{` + c + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf build","description":"Clean the build"},"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"rm -rf build/*"}],"behavior":"allow","destination":"localSettings"}]}`),
			activity: "needs_input", source: "interaction.input_requested", types: []string{"interaction.input_requested"}},
		{name: "PostToolUse", payload: fixed(`{` + c + `,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{ "description":"Clean the build", "command":"rm -rf build" },"tool_response":{"stdout":"","stderr":"","interrupted":false,"isImage":false},"tool_use_id":"toolu_06","duration_ms":412}`),
			activity: "working", source: "interaction.input_resolved", types: []string{"tool.post_use", "interaction.input_resolved"}},
		{name: "Stop", payload: fixed(`{` + c + `,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done: rounding fixed."}`),
			activity: "idle", source: "turn.stop", types: []string{"turn.stop"}},
		{name: "SessionEnd", payload: fixed(`{` + c + `,"hook_event_name":"SessionEnd","reason":"prompt_input_exit"}`),
			activity: "idle", source: "turn.stop", types: []string{"session.end"}, ended: true},
	}
}

func codexCommon(sid, cwd string) string {
	return fmt.Sprintf(`"session_id":%q,"transcript_path":"/home/ana/.codex/sessions/2026/08/12/rollout-2026-08-12T10-02-00-%s.jsonl","cwd":%q,"model":"gpt-5.3-codex","permission_mode":"default"`, sid, sid, cwd)
}

const codexTurn = `"turn_id":"019a3c4f-1111-7000-8000-000000000001"`

func codexPrompt(sid, cwd string) string {
	return `{` + codexCommon(sid, cwd) + `,` + codexTurn + `,"hook_event_name":"UserPromptSubmit","prompt":"refactor the cart"}`
}

func codexSteps(sid, cwd string) []step {
	c := codexCommon(sid, cwd)
	return []step{
		{name: "SessionStart", payload: fixed(`{` + c + `,"hook_event_name":"SessionStart","source":"startup"}`),
			activity: "idle", source: "session.start", types: []string{"session.start"}},
		{name: "UserPromptSubmit", payload: fixed(codexPrompt(sid, cwd)),
			activity: "working", source: "user_prompt.submit", types: []string{"user_prompt.submit"}},
		{name: "PreToolUse", payload: fixed(`{` + c + `,` + codexTurn + `,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push origin main"},"tool_use_id":"call_Yb33"}`),
			activity: "working", source: "user_prompt.submit", types: []string{"tool.pre_use"}},
		{name: "PermissionRequest", payload: fixed(`{` + c + `,` + codexTurn + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"git push origin main"}}`),
			activity: "needs_input", source: "interaction.input_requested", types: []string{"interaction.input_requested"}},
		{name: "PostToolUse", payload: fixed(`{` + c + `,` + codexTurn + `,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"git push origin main"},"tool_response":"To github.com:ana/shop.git","tool_use_id":"call_Yb33"}`),
			activity: "working", source: "interaction.input_resolved", types: []string{"tool.post_use", "interaction.input_resolved"}},
		{name: "Stop", payload: fixed(`{` + c + `,` + codexTurn + `,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"All tests pass."}`),
			activity: "idle", source: "turn.stop", types: []string{"turn.stop"}},
		{name: "SessionEnd", payload: fixed(`{` + c + `,"hook_event_name":"SessionEnd","reason":"exit"}`),
			activity: "idle", source: "turn.stop", types: []string{"session.end"}, ended: true},
	}
}

// codexNotify is the legacy notify JSON (the last argv argument).
func codexNotify(thread, cwd string) string {
	return `{"type":"agent-turn-complete","thread-id":"` + thread + `","turn-id":"12","cwd":"` + cwd + `","input-messages":["refactor the cart"],"last-assistant-message":"done"}`
}

func cursorCommon(conv, cwd string) string {
	return fmt.Sprintf(`"conversation_id":%q,"generation_id":"9b2d6e14-7a3c-4f01-8e5d-c1f0a2b3d4e5","model":"claude-4.5-sonnet","cursor_version":"2.1.20","workspace_roots":[%q],"user_email":"ana@example.com","transcript_path":null`, conv, cwd)
}

// cursorSteps: Cursor reports no operator prompt, so there is no
// permission step and never needs_input.
func cursorSteps(conv, cwd string) []step {
	c := cursorCommon(conv, cwd)
	return []step{
		{name: "sessionStart", payload: fixed(`{` + c + `,"hook_event_name":"sessionStart","session_id":"` + conv + `","is_background_agent":false,"composer_mode":"agent"}`),
			activity: "idle", source: "session.start", types: []string{"session.start"}},
		{name: "beforeSubmitPrompt", payload: fixed(`{` + c + `,"hook_event_name":"beforeSubmitPrompt","prompt":"add tax rounding","attachments":[]}`),
			activity: "working", source: "user_prompt.submit", types: []string{"user_prompt.submit"}},
		{name: "beforeShellExecution", payload: fixed(`{` + c + `,"hook_event_name":"beforeShellExecution","command":"npm test","cwd":"` + cwd + `","sandbox":false}`),
			activity: "working", source: "user_prompt.submit", types: []string{"tool.pre_use", "command.start"}},
		{name: "afterShellExecution", payload: fixed(`{` + c + `,"hook_event_name":"afterShellExecution","command":"npm test","output":"12 passing","duration":1234}`),
			activity: "working", source: "user_prompt.submit", types: []string{"tool.post_use"}},
		{name: "stop", payload: fixed(`{` + c + `,"hook_event_name":"stop","status":"completed","loop_count":0}`),
			activity: "idle", source: "turn.stop", types: []string{"turn.stop"}},
		{name: "sessionEnd", payload: fixed(`{` + c + `,"hook_event_name":"sessionEnd","session_id":"` + conv + `","reason":"user_close","duration_ms":5505,"is_background_agent":false,"final_status":"completed"}`),
			activity: "idle", source: "turn.stop", types: []string{"session.end"}, ended: true},
	}
}

// geminiClock stamps Gemini payloads: Gemini's timestamp is the event
// time, so each must be later than the one before.
type geminiClock struct{ last time.Time }

func (c *geminiClock) next() time.Time {
	now := time.Now().UTC().Truncate(time.Millisecond)
	if !now.After(c.last) {
		now = c.last.Add(time.Millisecond)
	}
	c.last = now
	return now
}

// geminiAt is a Gemini payload with an explicit event time.
func geminiAt(sid, cwd, name string, ts time.Time, extra string) string {
	return fmt.Sprintf(`{"session_id":%q,"transcript_path":"/home/ana/.gemini/tmp/5d1e/chats/session-%s.json","cwd":%q,"hook_event_name":%q,"timestamp":%q,%s}`,
		sid, sid[:8], cwd, name, ts.UTC().Format("2006-01-02T15:04:05.000Z"), extra)
}

func geminiSteps(sid, cwd string) []step {
	clk := &geminiClock{}
	ev := func(name, extra string) func() string {
		return func() string { return geminiAt(sid, cwd, name, clk.next(), extra) }
	}
	shell := `"tool_name":"run_shell_command","tool_input":{"command":"npm test","description":"Run tests"}`
	return []step{
		{name: "SessionStart", payload: ev("SessionStart", `"source":"startup"`),
			activity: "idle", source: "session.start", types: []string{"session.start"}},
		{name: "BeforeAgent", payload: ev("BeforeAgent", `"prompt":"add rounding"`),
			activity: "working", source: "user_prompt.submit", types: []string{"user_prompt.submit"}},
		{name: "BeforeTool", payload: ev("BeforeTool", shell),
			activity: "working", source: "user_prompt.submit", types: []string{"tool.pre_use"}},
		{name: "Notification ToolPermission", payload: ev("Notification", `"notification_type":"ToolPermission","message":"Tool Run shell command requires execution","details":{"tool_name":"run_shell_command","tool_input":{"description":"Run tests","command":"npm test"}}`),
			activity: "needs_input", source: "interaction.input_requested", types: []string{"interaction.input_requested"}},
		{name: "AfterTool", payload: ev("AfterTool", shell+`,"tool_response":{"llmContent":"12 passing","returnDisplay":"12 passing"}`),
			activity: "working", source: "interaction.input_resolved", types: []string{"tool.post_use", "interaction.input_resolved"}},
		{name: "AfterAgent", payload: ev("AfterAgent", `"prompt":"add rounding","prompt_response":"done","stop_hook_active":false`),
			activity: "idle", source: "turn.stop", types: []string{"turn.stop"}},
		{name: "SessionEnd", payload: ev("SessionEnd", `"reason":"exit"`),
			activity: "idle", source: "turn.stop", types: []string{"session.end"}, ended: true},
	}
}

// Helper process modes, run by TestMain when helperEnv is set.
const (
	helperHookParent = "hook-parent" // run one hook as a child, then sleep
	helperPayloadEnv = "HARN_E2E_PAYLOAD"
	helperBinEnv     = "HARN_E2E_BIN"
)

// runHelper is the test binary re-executed as a plain (non-shell) agent
// stand-in: it runs `harn hook claude-code` as its child, once per line of
// helperPayloadEnv, so that the hooks record this process as the
// session's agent; then it prints "ready" and sleeps until it is killed
// (at most a minute).
func runHelper() int {
	if os.Getenv(helperEnv) == helperOtherUser {
		return runOtherUserHelper()
	}
	if os.Getenv(helperEnv) == helperSlowFlood {
		return runSlowFlood()
	}
	if os.Getenv(helperEnv) == helperAgentRuns {
		return runAgentHelper()
	}
	if os.Getenv(helperEnv) != helperHookParent {
		fmt.Fprintln(os.Stderr, "e2e helper: unknown mode", os.Getenv(helperEnv))
		return 2
	}
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HARN_E2E_") {
			environ = append(environ, kv)
		}
	}
	for _, payload := range strings.Split(os.Getenv(helperPayloadEnv), "\n") {
		cmd := exec.Command(os.Getenv(helperBinEnv), "hook", "claude-code")
		cmd.Env = environ
		cmd.Stdin = strings.NewReader(payload)
		cmd.Stderr = os.Stderr // stdout (peer context) is not needed
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e helper: hook:", err)
			return 1
		}
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	return 0
}
