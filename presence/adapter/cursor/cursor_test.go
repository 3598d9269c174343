package cursor_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/cursor"
	at "github.com/harn-dev/harn/presence/adapter/internal/adaptertest"
)

// Realistic Cursor agent hook payloads (cursor.com/docs/agent/hooks).
const (
	conv   = "c0a8f5e2-41d7-4b9e-a3f0-7d2e91b6c845"
	child  = "5e1b7c90-2d4a-4f83-b6e1-0a9c3d7f2e18"
	common = `"conversation_id":"` + conv + `","generation_id":"9b2d6e14-7a3c-4f01-8e5d-c1f0a2b3d4e5","model":"claude-4.5-sonnet","cursor_version":"2.1.20","workspace_roots":["/home/ana/shop","/home/ana/lib"],"user_email":"ana@example.com","transcript_path":null`

	sessionStart = `{` + common + `,"hook_event_name":"sessionStart","session_id":"` + conv + `","is_background_agent":false,"composer_mode":"agent"}`
	sessionEnd   = `{` + common + `,"hook_event_name":"sessionEnd","session_id":"` + conv + `","reason":"user_close","duration_ms":5505,"is_background_agent":false,"final_status":"completed"}`
	submit       = `{` + common + `,"hook_event_name":"beforeSubmitPrompt","prompt":"SECRET add tax rounding","attachments":[{"type":"file","filePath":"/home/ana/shop/cart/tax.go"}]}`
	preTool      = `{` + common + `,"hook_event_name":"preToolUse","tool_name":"Write","tool_input":{"file_path":"/home/ana/shop/cart/tax.go","content":"SECRET"},"tool_use_id":"call_abc\nctc_def","cwd":"/home/ana/shop","agent_message":"SECRET"}`
	postTool     = `{` + common + `,"hook_event_name":"postToolUse","tool_name":"Write","tool_input":{"file_path":"/home/ana/shop/cart/tax.go","content":"SECRET"},"tool_output":"{\"success\":true,\"SECRET\":1}","duration":36.8,"tool_use_id":"call_abc\nctc_def"}`
	postFail     = `{` + common + `,"hook_event_name":"postToolUseFailure","tool_name":"Read","tool_input":{"path":"/nope"},"error_message":"SECRET not found","failure_type":"error","duration":3}`
	beforeShell  = `{` + common + `,"hook_event_name":"beforeShellExecution","command":"SECRET=1 npm test","cwd":"/home/ana/shop/web","sandbox":false}`
	afterShell   = `{` + common + `,"hook_event_name":"afterShellExecution","command":"SECRET=1 npm test","output":"SECRET 12 passing","duration":1234}`
	beforeMCP    = `{` + common + `,"hook_event_name":"beforeMCPExecution","tool_name":"create_issue","tool_input":"{\"title\":\"SECRET\"}","url":"https://mcp.example.com/sse"}`
	afterMCP     = `{` + common + `,"hook_event_name":"afterMCPExecution","tool_name":"create_issue","tool_input":"{\"title\":\"SECRET\"}","result_json":"{\"id\":\"SECRET\"}","duration":250}`
	beforeRead   = `{` + common + `,"hook_event_name":"beforeReadFile","file_path":"/home/ana/shop/.env","content":"SECRET_KEY=1","attachments":[]}`
	fileEdit     = `{` + common + `,"hook_event_name":"afterFileEdit","file_path":"/home/ana/shop/cart/tax.go","edits":[{"old_string":"SECRET a","new_string":"SECRET b"}]}`
	fileEditRel  = `{` + common + `,"hook_event_name":"afterFileEdit","file_path":"cart/./round.go","edits":[]}`
	response     = `{` + common + `,"hook_event_name":"afterAgentResponse","text":"SECRET Done."}`
	named        = `{` + common + `,"hook_event_name":"afterAgentResponse","text":"Done. Session name: **[BLOCKED] - Agent Flint - add tax rounding**\nPeer: Agent Sable - docs"}`
	namedMsg     = `{` + common + `,"hook_event_name":"afterAgentResponse","agent_message":"Agent Flint - add tax rounding"}`
	namedThought = `{` + common + `,"hook_event_name":"afterAgentThought","text":"Agent Flint - add tax rounding"}`
	thought      = `{` + common + `,"hook_event_name":"afterAgentThought","text":"SECRET thinking","duration_ms":5000}`
	stop         = `{` + common + `,"hook_event_name":"stop","status":"completed","loop_count":0}`
	stopAborted  = `{` + common + `,"hook_event_name":"stop","status":"aborted","loop_count":0}`
	subStart     = `{` + common + `,"hook_event_name":"subagentStart","subagent_id":"` + child + `","subagent_type":"generalPurpose","subagent_model":"gpt-5","task":"SECRET explore the cart","parent_conversation_id":"` + conv + `","tool_call_id":"call_t1","is_parallel_worker":false}`
	subStop      = `{` + common + `,"hook_event_name":"subagentStop","subagent_id":"` + child + `","subagent_type":"generalPurpose","status":"completed","duration_ms":5000,"summary":"SECRET","parent_conversation_id":"` + conv + `","message_count":10,"tool_call_count":3,"modified_files":["cart/x.go"],"loop_count":1,"task":"SECRET","description":"SECRET","agent_transcript_path":"/tmp/t.jsonl"}`
	unknown      = `{` + common + `,"hook_event_name":"beforeTabFileRead","file_path":"/home/ana/shop/a.go","content":"SECRET"}`
	minimal      = `{"conversation_id":"` + conv + `","hook_event_name":"stop"}`
	startOnlyID  = `{"session_id":"` + conv + `","hook_event_name":"sessionStart"}`
)

func attrs(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func TestDecode(t *testing.T) {
	at.Run(t, cursor.New(), "cursor", []at.Case{
		{Name: "sessionStart with context", Payload: sessionStart, Native: "sessionStart", Session: conv, Wants: true,
			Events:  []at.Want{{Type: presence.TypeSessionStart, Session: conv, Attrs: attrs("cwd", "/home/ana/shop")}},
			Context: "peer: bo edits cart/tax.go", Output: `{"additional_context":"peer: bo edits cart/tax.go"}` + "\n"},
		{Name: "sessionStart without context prints nothing", Payload: sessionStart, Native: "sessionStart", Session: conv, Wants: true,
			Events: []at.Want{{Type: presence.TypeSessionStart, Session: conv}}},
		{Name: "sessionStart with only session_id", Payload: startOnlyID, Native: "sessionStart", Session: conv, Wants: true,
			Events: []at.Want{{Type: presence.TypeSessionStart, Session: conv}}},
		{Name: "sessionEnd", Payload: sessionEnd, Native: "sessionEnd", Session: conv,
			Events: []at.Want{{Type: presence.TypeSessionEnd, Session: conv, Attrs: attrs("reason", "user_close")}}},
		{Name: "beforeSubmitPrompt answers continue", Payload: submit, Native: "beforeSubmitPrompt", Session: conv,
			Events: []at.Want{{Type: presence.TypeUserPromptSubmit, Session: conv}}, Output: `{"continue":true}` + "\n"},
		{Name: "preToolUse takes no permission decision", Payload: preTool, Native: "preToolUse", Session: conv,
			Events:  []at.Want{{Type: presence.TypeToolPreUse, Session: conv, Attrs: attrs("tool", "Write", "cwd", "/home/ana/shop")}},
			Context: "ctx", Output: ""},
		{Name: "postToolUse", Payload: postTool, Native: "postToolUse", Session: conv,
			Events: []at.Want{{Type: presence.TypeToolPostUse, Session: conv, Attrs: attrs("tool", "Write")}}},
		{Name: "postToolUseFailure", Payload: postFail, Native: "postToolUseFailure", Session: conv,
			Events: []at.Want{{Type: presence.TypeToolPostUse, Session: conv, Attrs: attrs("tool", "Read")}}},
		{Name: "beforeShellExecution", Payload: beforeShell, Native: "beforeShellExecution", Session: conv,
			Events: []at.Want{
				{Type: presence.TypeToolPreUse, Session: conv, Attrs: attrs("tool", "Shell", "cwd", "/home/ana/shop/web")},
				{Type: presence.TypeCommandStart, Session: conv, Attrs: attrs("tool", "Shell")},
			}, Output: ""},
		{Name: "afterShellExecution", Payload: afterShell, Native: "afterShellExecution", Session: conv,
			Events: []at.Want{{Type: presence.TypeToolPostUse, Session: conv, Attrs: attrs("tool", "Shell")}}},
		{Name: "beforeMCPExecution", Payload: beforeMCP, Native: "beforeMCPExecution", Session: conv,
			Events: []at.Want{{Type: presence.TypeToolPreUse, Session: conv, Attrs: attrs("tool", "create_issue")}}, Output: ""},
		{Name: "afterMCPExecution", Payload: afterMCP, Native: "afterMCPExecution", Session: conv,
			Events: []at.Want{{Type: presence.TypeToolPostUse, Session: conv, Attrs: attrs("tool", "create_issue")}}},
		{Name: "beforeReadFile", Payload: beforeRead, Native: "beforeReadFile", Session: conv,
			Events: []at.Want{{Type: presence.TypeToolPreUse, Session: conv, Attrs: attrs("tool", "Read")}}, Output: ""},
		{Name: "afterFileEdit claims", Payload: fileEdit, Native: "afterFileEdit", Session: conv,
			Events: []at.Want{
				{Type: presence.TypeToolPostUse, Session: conv, Attrs: attrs("tool", "Edit")},
				{Type: presence.TypeClaimWrite, Session: conv, Attrs: attrs("paths", []string{"/home/ana/shop/cart/tax.go"})},
			}},
		{Name: "afterFileEdit relative path joins the first workspace root", Payload: fileEditRel, Native: "afterFileEdit", Session: conv,
			Events: []at.Want{
				{Type: presence.TypeToolPostUse, Session: conv},
				{Type: presence.TypeClaimWrite, Session: conv, Attrs: attrs("paths", []string{"/home/ana/shop/cart/round.go"})},
			}},
		{Name: "afterAgentResponse", Payload: response, Native: "afterAgentResponse", Session: conv,
			Events: []at.Want{{Type: presence.TypeOutputChunk, Session: conv}}},
		{Name: "afterAgentThought", Payload: thought, Native: "afterAgentThought", Session: conv,
			Events: []at.Want{{Type: presence.TypeOutputChunk, Session: conv}}},
		{Name: "stop", Payload: stop, Native: "stop", Session: conv,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: conv, Attrs: attrs("reason", "completed")}}},
		{Name: "stop aborted", Payload: stopAborted, Native: "stop", Session: conv,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: conv, Attrs: attrs("reason", "aborted")}}},
		{Name: "subagentStart", Payload: subStart, Native: "subagentStart", Session: child,
			Events: []at.Want{{Type: presence.TypeSubagentStart, Session: child, Parent: conv, Attrs: attrs("agent_type", "generalPurpose")}}, Output: ""},
		{Name: "subagentStop", Payload: subStop, Native: "subagentStop", Session: child,
			Events: []at.Want{{Type: presence.TypeSubagentStop, Session: child, Parent: conv, Attrs: attrs("reason", "completed")}}},
		{Name: "unknown event is a diagnostic, not a session", Payload: unknown, Err: true},
		{Name: "missing optional fields", Payload: minimal, Native: "stop", Session: conv,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: conv, Attrs: attrs("cwd", nil, "reason", nil)}}},
		{Name: "empty", Payload: "", Err: true},
		{Name: "afterAgentResponse shows session names", Payload: named, Native: "afterAgentResponse", Session: conv,
			Events: []at.Want{
				{Type: presence.TypeOutputChunk, Session: conv},
				{Type: presence.TypeSessionNameSeen, Session: conv, Attrs: attrs("name", "[BLOCKED] - Agent Flint - add tax rounding**")},
				{Type: presence.TypeSessionNameSeen, Session: conv, Attrs: attrs("name", "[BLOCKED] - Agent Flint - add tax rounding")},
				{Type: presence.TypeSessionNameSeen, Session: conv, Attrs: attrs("name", "Agent Sable - docs")},
			}},
		{Name: "agent_message shows a session name", Payload: namedMsg, Native: "afterAgentResponse", Session: conv,
			Events: []at.Want{
				{Type: presence.TypeOutputChunk, Session: conv},
				{Type: presence.TypeSessionNameSeen, Session: conv, Attrs: attrs("name", "Agent Flint - add tax rounding")},
			}},
		{Name: "a thought shows nothing", Payload: namedThought, Native: "afterAgentThought", Session: conv,
			Events: []at.Want{{Type: presence.TypeOutputChunk, Session: conv}}},
		{Name: "a response without names", Payload: response, Native: "afterAgentResponse", Session: conv,
			Events: []at.Want{{Type: presence.TypeOutputChunk, Session: conv}}},
		{Name: "stop never blocks for a name", Payload: stop, Native: "stop", Session: conv,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: conv}}, PendingName: "Agent Flint - t"},
		{Name: "invalid JSON", Payload: `{"conversation_id":`, Err: true},
		{Name: "no conversation", Payload: `{"hook_event_name":"stop","status":"completed","workspace_roots":["/x"]}`, Err: true},
		{Name: "subagentStart without subagent_id", Payload: `{` + common + `,"hook_event_name":"subagentStart"}`, Err: true},
	})
}

// TestNeverNeedsInput: whatever Cursor reports, no event claims an operator
// prompt.
func TestNeverNeedsInput(t *testing.T) {
	for _, p := range seeds {
		res, err := cursor.New().Decode(at.Input(p))
		if err != nil {
			continue
		}
		for _, e := range res.Events {
			if e.Type == presence.TypeInputRequested {
				t.Fatalf("%s emitted %s", res.Native, e.Type)
			}
		}
	}
}

func TestFold(t *testing.T) {
	at.Fold(t, cursor.New(), conv, []at.Step{
		{Payload: sessionStart, Want: presence.ActivityIdle},
		{Payload: submit, Want: presence.ActivityWorking},
		{Payload: beforeShell, Want: presence.ActivityWorking},
		{Payload: afterShell, Want: presence.ActivityWorking},
		{Payload: preTool, Want: presence.ActivityWorking},
		{Payload: fileEdit, Want: presence.ActivityWorking},
		{Payload: response, Want: presence.ActivityWorking},
		{Payload: stop, Want: presence.ActivityIdle},
		{Payload: sessionEnd, Want: presence.ActivityIdle},
	})
	at.Fold(t, cursor.New(), child, []at.Step{
		{Payload: subStart, Want: presence.ActivityIdle},
		{Payload: subStop, Want: presence.ActivityIdle},
	})
}

// The name Cursor's agent shows ends a pending re-mint; a peer's does not.
func TestNameSeenFromResponse(t *testing.T) {
	lc := presence.Event{ID: "0", SessionID: conv, Type: presence.TypeTaskState, TS: at.Now.Add(-time.Second), Attrs: map[string]any{
		presence.AttrTaskState: "blocked", presence.AttrReason: "waiting", presence.AttrSuggestedName: "[BLOCKED] - Agent Flint - add tax rounding"}}
	evs := []presence.Event{lc}
	res, err := cursor.New().Decode(at.Input(named))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range res.Events {
		e.ID = fmt.Sprint(i + 1)
		evs = append(evs, e)
	}
	if before := presence.Fold(evs[:1]); !before.NamePending() {
		t.Fatal("the re-mint is not pending")
	}
	s := presence.Fold(evs)
	if s.NamePending() || s.SessionNameSeenFor != "[BLOCKED] - Agent Flint - add tax rounding" {
		t.Fatalf("after the response: pending %v, seen %q", s.NamePending(), s.SessionNameSeenFor)
	}
}

func TestEvents(t *testing.T) {
	for _, ev := range cursor.Events() {
		res, err := cursor.New().Decode(at.Input(`{` + common + `,"hook_event_name":"` + ev + `","subagent_id":"` + child + `"}`))
		if err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
		if res.Events[0].Type == presence.TypeCoordination {
			t.Errorf("registered event %s is not mapped", ev)
		}
	}
}

var seeds = []string{sessionStart, sessionEnd, submit, preTool, postTool, postFail, beforeShell, afterShell,
	beforeMCP, afterMCP, beforeRead, fileEdit, fileEditRel, response, named, namedMsg, namedThought, thought, stop, stopAborted, subStart,
	subStop, unknown, minimal, startOnlyID, "", "[]"}

func FuzzDecode(f *testing.F) {
	at.Fuzz(f, []adapter.Adapter{cursor.New()}, seeds)
}
