package claudecode_test

import (
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/claudecode"
	at "github.com/harn-dev/harn/presence/adapter/internal/adaptertest"
)

// Realistic Claude Code hook payloads (hooks reference). Raw content carries
// at.Secret so the table can prove it never reaches an attribute.
const (
	common = `"session_id":"8a1f0c2e-5b7d-4e21-9c3a-0d6e2f4b1a77","transcript_path":"/home/ana/.claude/projects/-home-ana-shop/8a1f0c2e-5b7d-4e21-9c3a-0d6e2f4b1a77.jsonl","cwd":"/home/ana/shop","permission_mode":"default"`
	sid    = "8a1f0c2e-5b7d-4e21-9c3a-0d6e2f4b1a77"
	child  = "a3c9e2f1b7d64c0e"

	sessionStart = `{` + common + `,"hook_event_name":"SessionStart","source":"startup","model":"claude-sonnet-4-6"}`
	promptSubmit = `{` + common + `,"hook_event_name":"UserPromptSubmit","prompt":"SECRET: fix the checkout total rounding"}`
	preBash      = `{` + common + `,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"SECRET=1 go test ./...","description":"Run the tests"},"tool_use_id":"toolu_01ABCxyz"}`
	preWrite     = `{` + common + `,"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/home/ana/shop/cart/total.go","content":"package cart // SECRET"},"tool_use_id":"toolu_02"}`
	preEditRel   = `{` + common + `,"hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":"cart/../cart/round.go","old_string":"SECRET old","new_string":"SECRET new","replace_all":false},"tool_use_id":"toolu_03"}`
	preMulti     = `{` + common + `,"hook_event_name":"PreToolUse","tool_name":"MultiEdit","tool_input":{"file_path":"/home/ana/shop/cart/tax.go","edits":[{"old_string":"SECRET a","new_string":"b"}]},"tool_use_id":"toolu_04"}`
	preNotebook  = `{` + common + `,"hook_event_name":"PreToolUse","tool_name":"NotebookEdit","tool_input":{"notebook_path":"/home/ana/shop/analysis.ipynb","cell_id":"c1","new_source":"SECRET","edit_mode":"replace"},"tool_use_id":"toolu_05"}`
	permRequest  = `{` + common + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf build/SECRET","description":"Clean the build"},"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"rm -rf build/*"}],"behavior":"allow","destination":"localSettings"}]}`
	// The same tool call as permRequest, keys reordered and spaced.
	postBash     = `{` + common + `,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{ "description":"Clean the build", "command":"rm -rf build/SECRET" },"tool_response":{"stdout":"SECRET out","stderr":"","interrupted":false,"isImage":false},"tool_use_id":"toolu_06","duration_ms":412}`
	postOther    = `{` + common + `,"hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{"file_path":"/home/ana/shop/README.md"},"tool_response":{"type":"text","file":{"content":"SECRET"}},"tool_use_id":"toolu_07"}`
	postFail     = `{` + common + `,"hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"rm -rf build/SECRET","description":"Clean the build"},"tool_use_id":"toolu_06","error":"exit status 1: SECRET","is_interrupt":false}`
	postInterr   = `{` + common + `,"hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"sleep 600"},"tool_use_id":"toolu_08","error":"Interrupted by user","is_interrupt":true}`
	notePerm     = `{` + common + `,"hook_event_name":"Notification","message":"SECRET Claude needs your permission to use Bash","title":"Permission needed","notification_type":"permission_prompt"}`
	noteIdle     = `{` + common + `,"hook_event_name":"Notification","message":"SECRET Claude is waiting for your input","notification_type":"idle_prompt"}`
	noteElicit   = `{` + common + `,"hook_event_name":"Notification","message":"SECRET","notification_type":"elicitation_dialog"}`
	noteAuth     = `{` + common + `,"hook_event_name":"Notification","message":"SECRET signed in","notification_type":"auth_success"}`
	elicitation  = `{` + common + `,"hook_event_name":"Elicitation","mcp_server_name":"github","message":"SECRET Which repository?","requested_schema":{"type":"object","properties":{"repo":{"type":"string"}}}}`
	stop         = `{` + common + `,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"SECRET Done: rounding fixed."}`
	stopAgain    = `{` + common + `,"hook_event_name":"Stop","stop_hook_active":true,"last_assistant_message":"SECRET"}`
	permEdit     = `{` + common + `,"hook_event_name":"PermissionRequest","tool_name":"Edit","tool_input":{"file_path":"/home/ana/shop/src/app.go","old_string":"SECRET","new_string":"SECRET2"}}`
	permEnvBash  = `{` + common + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"TOKEN=SECRET curl https://x"}}`
	permGit      = `{` + common + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"/usr/bin/git push origin SECRET"}}`
	permMCP      = `{` + common + `,"hook_event_name":"PermissionRequest","tool_name":"mcp__github__create_issue","tool_input":{"title":"SECRET"}}`
	stopFailure  = `{` + common + `,"hook_event_name":"StopFailure","error":"rate_limit","error_details":"SECRET 429","last_assistant_message":"SECRET"}`
	subStart     = `{` + common + `,"hook_event_name":"SubagentStart","agent_id":"` + child + `","agent_type":"Explore"}`
	subPre       = `{` + common + `,"hook_event_name":"PreToolUse","agent_id":"` + child + `","agent_type":"Explore","tool_name":"Write","tool_input":{"file_path":"notes/explore.md","content":"SECRET"},"tool_use_id":"toolu_09"}`
	subStop      = `{` + common + `,"hook_event_name":"SubagentStop","agent_id":"` + child + `","agent_type":"Explore","stop_hook_active":false,"agent_transcript_path":"/home/ana/.claude/projects/x/subagents/agent-a3c9.jsonl","last_assistant_message":"SECRET findings"}`
	preCompact   = `{` + common + `,"hook_event_name":"PreCompact","trigger":"auto","custom_instructions":"SECRET"}`
	postCompact  = `{` + common + `,"hook_event_name":"PostCompact","trigger":"manual","compact_summary":"SECRET"}`
	sessionEnd   = `{` + common + `,"hook_event_name":"SessionEnd","reason":"prompt_input_exit"}`
	unknown      = `{` + common + `,"hook_event_name":"TeammateIdle","teammate_name":"reviewer"}`
	unknownField = `{` + common + `,"hook_event_name":"SessionStart","source":"resume","model":"m","future_field":{"nested":[1,2,3]},"agent_pid":"not-a-number"}`
	minimal      = `{"session_id":"` + sid + `","hook_event_name":"UserPromptSubmit"}`
	wrongTypes   = `{"session_id":"` + sid + `","hook_event_name":"PreToolUse","cwd":42,"tool_name":["Bash"],"tool_input":"rm -rf"}`
)

var cwd = map[string]any{presence.AttrCwd: "/home/ana/shop"}

const transcript = "/home/ana/.claude/projects/-home-ana-shop/8a1f0c2e-5b7d-4e21-9c3a-0d6e2f4b1a77.jsonl"

func attrs(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func key(t *testing.T, payload string) string {
	t.Helper()
	res, err := claudecode.New().Decode(at.Input(payload))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Events {
		if k := e.AttrString(presence.AttrInputKey); k != "" {
			return k
		}
	}
	t.Fatalf("%s carries no request key", res.Native)
	return ""
}

func cases(t *testing.T) []at.Case {
	k := key(t, permRequest)
	return []at.Case{
		{Name: "SessionStart", Payload: sessionStart, Native: "SessionStart", Session: sid,
			Events: []at.Want{{Type: presence.TypeSessionStart, Session: sid, Attrs: attrs("source", "startup", "cwd", "/home/ana/shop")}}},
		{Name: "UserPromptSubmit", Payload: promptSubmit, Native: "UserPromptSubmit", Session: sid, Wants: true,
			Events:  []at.Want{{Type: presence.TypeUserPromptSubmit, Session: sid, Attrs: attrs("cwd", "/home/ana/shop", "transcript_path", transcript)}},
			Context: "peer: bo is editing cart/tax.go",
			Output:  `{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"peer: bo is editing cart/tax.go"}}` + "\n"},
		{Name: "UserPromptSubmit without context prints nothing", Payload: promptSubmit, Native: "UserPromptSubmit", Session: sid, Wants: true,
			Events: []at.Want{{Type: presence.TypeUserPromptSubmit, Session: sid}}},
		{Name: "PreToolUse Bash", Payload: preBash, Native: "PreToolUse", Session: sid,
			Events:  []at.Want{{Type: presence.TypeToolPreUse, Session: sid, Attrs: attrs("tool", "Bash")}},
			Context: "ignored", Output: ""},
		{Name: "PreToolUse Write claims", Payload: preWrite, Native: "PreToolUse", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPreUse, Session: sid, Attrs: attrs("tool", "Write")},
				{Type: presence.TypeClaimWrite, Session: sid, Attrs: attrs("paths", []string{"/home/ana/shop/cart/total.go"})},
			}},
		{Name: "PreToolUse Edit relative path joined to cwd", Payload: preEditRel, Native: "PreToolUse", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPreUse, Session: sid},
				{Type: presence.TypeClaimWrite, Session: sid, Attrs: attrs("paths", []string{"/home/ana/shop/cart/round.go"})},
			}},
		{Name: "PreToolUse MultiEdit", Payload: preMulti, Native: "PreToolUse", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPreUse, Session: sid},
				{Type: presence.TypeClaimWrite, Session: sid, Attrs: attrs("paths", []string{"/home/ana/shop/cart/tax.go"})},
			}},
		{Name: "PreToolUse NotebookEdit", Payload: preNotebook, Native: "PreToolUse", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPreUse, Session: sid},
				{Type: presence.TypeClaimWrite, Session: sid, Attrs: attrs("paths", []string{"/home/ana/shop/analysis.ipynb"})},
			}},
		{Name: "PermissionRequest", Payload: permRequest, Native: "PermissionRequest", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("tool", "Bash", "request_key", k, "summary", "Bash: rm")}}},
		{Name: "PermissionRequest for an edit names the file", Payload: permEdit, Native: "PermissionRequest", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("tool", "Edit", "summary", "Edit src/app.go")}}},
		{Name: "PermissionRequest never shows a variable", Payload: permEnvBash, Native: "PermissionRequest", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("summary", "Bash")}}},
		{Name: "PermissionRequest shows the program's name", Payload: permGit, Native: "PermissionRequest", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("summary", "Bash: git")}}},
		{Name: "PermissionRequest for an MCP tool", Payload: permMCP, Native: "PermissionRequest", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("summary", "mcp__github__create_issue")}}},
		{Name: "PostToolUse resolves the same call", Payload: postBash, Native: "PostToolUse", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPostUse, Session: sid, Attrs: attrs("tool", "Bash", "request_key", nil)},
				{Type: presence.TypeInputResolved, Session: sid, Attrs: attrs("tool", "Bash", "input_key", k, "request_key", "call:toolu_06", "call_key", "call:toolu_06")},
			}},
		{Name: "PostToolUseFailure resolves", Payload: postFail, Native: "PostToolUseFailure", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPostUse, Session: sid, Attrs: attrs("error", nil)},
				{Type: presence.TypeInputResolved, Session: sid, Attrs: attrs("input_key", k, "call_key", "call:toolu_06")},
			}},
		{Name: "PostToolUseFailure interrupt stops the turn", Payload: postInterr, Native: "PostToolUseFailure", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPostUse, Session: sid},
				{Type: presence.TypeTurnStop, Session: sid, Attrs: attrs("reason", "interrupt")},
			}},
		{Name: "Notification permission_prompt", Payload: notePerm, Native: "Notification", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("notification_type", "permission_prompt", "request_key", nil, "summary", "question")}}},
		{Name: "Notification elicitation_dialog", Payload: noteElicit, Native: "Notification", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid}}},
		{Name: "Notification idle_prompt is narration", Payload: noteIdle, Native: "Notification", Session: sid,
			Events: []at.Want{{Type: presence.TypeNarration, Session: sid, Attrs: attrs("notification_type", "idle_prompt")}}},
		{Name: "Notification auth_success is narration", Payload: noteAuth, Native: "Notification", Session: sid,
			Events: []at.Want{{Type: presence.TypeNarration, Session: sid}}},
		{Name: "Elicitation", Payload: elicitation, Native: "Elicitation", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("request_key", nil, "summary", "question")}}},
		{Name: "Stop", Payload: stop, Native: "Stop", Session: sid,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid, Attrs: attrs("reason", nil, "transcript_path", transcript)}}},
		{Name: "Stop with a pending name asks for it", Payload: stop, Native: "Stop", Session: sid,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid}}, Context: "peers", PendingName: "[BLOCKED] - Agent Flint - fix rounding",
			Output: `{"decision":"block","reason":"harn: this session has a new name. Before you stop, show this session name: [BLOCKED] - Agent Flint - fix rounding (one line, exactly as written, so that the operator sees it), then stop."}` + "\n"},
		{Name: "Stop after a block never blocks again", Payload: stopAgain, Native: "Stop", Session: sid,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid}}, PendingName: "Agent Flint - fix rounding", Output: ""},
		{Name: "a pending name outside Stop prints nothing", Payload: preBash, Native: "PreToolUse", Session: sid,
			Events: []at.Want{{Type: presence.TypeToolPreUse, Session: sid}}, PendingName: "Agent Flint - fix rounding", Output: ""},
		{Name: "StopFailure", Payload: stopFailure, Native: "StopFailure", Session: sid,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid, Attrs: attrs("error", "rate_limit", "transcript_path", transcript)}}, PendingName: "x"},
		{Name: "SubagentStart", Payload: subStart, Native: "SubagentStart", Session: child,
			Events: []at.Want{{Type: presence.TypeSubagentStart, Session: child, Parent: sid, Attrs: attrs("agent_type", "Explore")}}},
		{Name: "tool inside a subagent belongs to the child", Payload: subPre, Native: "PreToolUse", Session: child,
			Events: []at.Want{
				{Type: presence.TypeToolPreUse, Session: child, Parent: sid},
				{Type: presence.TypeClaimWrite, Session: child, Parent: sid, Attrs: attrs("paths", []string{"/home/ana/shop/notes/explore.md"})},
			}},
		{Name: "SubagentStop", Payload: subStop, Native: "SubagentStop", Session: child,
			Events: []at.Want{{Type: presence.TypeSubagentStop, Session: child, Parent: sid}}},
		{Name: "PreCompact", Payload: preCompact, Native: "PreCompact", Session: sid,
			Events: []at.Want{{Type: presence.TypeNarration, Session: sid, Attrs: attrs("trigger", "auto")}}},
		{Name: "PostCompact", Payload: postCompact, Native: "PostCompact", Session: sid,
			Events: []at.Want{{Type: presence.TypeNarration, Session: sid, Attrs: attrs("trigger", "manual")}}},
		{Name: "SessionEnd", Payload: sessionEnd, Native: "SessionEnd", Session: sid,
			Events: []at.Want{{Type: presence.TypeSessionEnd, Session: sid, Attrs: attrs("reason", "prompt_input_exit")}}},
		{Name: "unknown event is a diagnostic, not a session", Payload: unknown, Err: true},
		{Name: "unknown fields ignored", Payload: unknownField, Native: "SessionStart", Session: sid,
			Events: []at.Want{{Type: presence.TypeSessionStart, Session: sid, Attrs: attrs("source", "resume", "agent_pid", nil)}}},
		{Name: "missing optional fields", Payload: minimal, Native: "UserPromptSubmit", Session: sid, Wants: true,
			Events: []at.Want{{Type: presence.TypeUserPromptSubmit, Session: sid, Attrs: attrs("cwd", nil)}}},
		{Name: "optional fields of the wrong type read as absent", Payload: wrongTypes, Native: "PreToolUse", Session: sid,
			Events: []at.Want{{Type: presence.TypeToolPreUse, Session: sid, Attrs: attrs("cwd", nil, "tool", nil)}}},
		{Name: "no digest function: no digest attr, keys still made", Payload: permRequest, NoDigest: true, Native: "PermissionRequest", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid}}},
		{Name: "empty input", Payload: "", Err: true},
		{Name: "blank input", Payload: " \n\t", Err: true},
		{Name: "invalid JSON", Payload: `{"session_id":"x",`, Err: true},
		{Name: "not an object", Payload: `["SessionStart"]`, Err: true},
		{Name: "null", Payload: `null`, Err: true},
		{Name: "no session id", Payload: `{"hook_event_name":"Stop","cwd":"/x"}`, Err: true},
		{Name: "session id with a slash", Payload: `{"hook_event_name":"Stop","session_id":"a/b"}`, Err: true},
		{Name: "session id too long", Payload: `{"hook_event_name":"Stop","session_id":"` + strings.Repeat("s", 300) + `"}`, Err: true},
		{Name: "no event name", Payload: `{"session_id":"s1"}`, Err: true},
		{Name: "SubagentStart without agent_id", Payload: `{` + common + `,"hook_event_name":"SubagentStart","agent_type":"Explore"}`, Err: true},
		{Name: "oversized input", Payload: `{"session_id":"s","hook_event_name":"Stop","pad":"` + strings.Repeat("x", adapter.MaxInputBytes) + `"}`, Err: true},
	}
}

func TestDecode(t *testing.T) {
	at.Run(t, claudecode.New(), "claude-code", cases(t))
}

func TestRequestKey(t *testing.T) {
	if key(t, permRequest) != key(t, postBash) {
		t.Fatal("permission request and post-use of the same call have different keys")
	}
	if key(t, permRequest) == key(t, postOther) {
		t.Fatal("different tool calls share a request key")
	}
	// Without a keyed digest the keys still match (plain SHA-256).
	plain := func(payload string) string {
		in := at.Input(payload)
		in.Digest = nil
		res, err := claudecode.New().Decode(in)
		if err != nil {
			t.Fatal(err)
		}
		return res.Events[len(res.Events)-1].AttrString(presence.AttrInputKey)
	}
	if a, b := plain(permRequest), plain(postBash); a == "" || a != b {
		t.Fatalf("plain keys %q and %q; want equal and non-empty", a, b)
	}
}

func TestFold(t *testing.T) {
	at.Fold(t, claudecode.New(), sid, []at.Step{
		{Payload: sessionStart, Want: presence.ActivityIdle},
		{Payload: promptSubmit, Want: presence.ActivityWorking},
		{Payload: preBash, Want: presence.ActivityWorking},
		{Payload: postOther, Want: presence.ActivityWorking},
		{Payload: permRequest, Want: presence.ActivityNeedsInput},
		{Payload: notePerm, Want: presence.ActivityNeedsInput},
		// Another tool finishing while the prompt is open does not answer it.
		{Payload: postOther, Want: presence.ActivityNeedsInput},
		{Payload: noteIdle, Want: presence.ActivityNeedsInput},
		{Payload: postBash, Want: presence.ActivityWorking},
		{Payload: stop, Want: presence.ActivityIdle},
		{Payload: promptSubmit, Want: presence.ActivityWorking},
		{Payload: postInterr, Want: presence.ActivityIdle},
		{Payload: sessionEnd, Want: presence.ActivityIdle},
	})
	// A keyless request (an MCP elicitation) is not answered by a tool
	// finishing; the next tool call or the stop ends it.
	at.Fold(t, claudecode.New(), sid, []at.Step{
		{Payload: promptSubmit, Want: presence.ActivityWorking},
		{Payload: elicitation, Want: presence.ActivityNeedsInput},
		{Payload: noteElicit, Want: presence.ActivityNeedsInput},
		{Payload: postOther, Want: presence.ActivityNeedsInput},
		{Payload: postBash, Want: presence.ActivityNeedsInput},
		{Payload: preBash, Want: presence.ActivityWorking},
		{Payload: notePerm, Want: presence.ActivityNeedsInput},
		{Payload: postOther, Want: presence.ActivityNeedsInput},
		{Payload: stop, Want: presence.ActivityIdle},
	})
	// The subagent's own session: started idle, working on its tool, idle
	// when it stops.
	at.Fold(t, claudecode.New(), child, []at.Step{
		{Payload: subStart, Want: presence.ActivityIdle},
		{Payload: subPre, Want: presence.ActivityWorking},
		{Payload: subStop, Want: presence.ActivityIdle},
	})
}

func TestOverlongPathSkipped(t *testing.T) {
	long := strings.Repeat("d/", presence.MaxAttrStringLen)
	res, err := claudecode.New().Decode(at.Input(`{` + common + `,"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"` + long + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 1 || res.Events[0].Type != presence.TypeToolPreUse {
		t.Fatalf("an over-long path must be skipped, not cut: got %s", at.Types(res.Events))
	}
}

func TestNoClock(t *testing.T) {
	in := at.Input(stop)
	in.Now = time.Time{}
	if _, err := claudecode.New().Decode(in); err == nil {
		t.Fatal("Decode accepted an input without a time")
	}
}

func TestEvents(t *testing.T) {
	for _, ev := range claudecode.Events() {
		res, err := claudecode.New().Decode(at.Input(`{` + common + `,"hook_event_name":"` + ev + `","agent_id":"` + child + `"}`))
		if err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
		if res.Events[0].Type == presence.TypeCoordination {
			t.Errorf("registered event %s is not mapped", ev)
		}
	}
}

var seeds = []string{
	sessionStart, promptSubmit, preBash, preWrite, preEditRel, preMulti, preNotebook, permRequest,
	postBash, postOther, postFail, postInterr, notePerm, noteIdle, noteElicit, noteAuth, elicitation,
	stop, stopAgain, permEdit, permEnvBash, permGit, permMCP, stopFailure, subStart, subPre, subStop, preCompact, postCompact, sessionEnd, unknown,
	unknownField, minimal, wrongTypes, "", "null", `{"session_id":"a/b","hook_event_name":"Stop"}`,
}

func FuzzDecode(f *testing.F) {
	at.Fuzz(f, []adapter.Adapter{claudecode.New()}, seeds)
}
