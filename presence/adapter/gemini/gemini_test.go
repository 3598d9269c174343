package gemini_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/gemini"
	at "github.com/harn-dev/harn/presence/adapter/internal/adaptertest"
)

const sid = "9f1c2b7e-3d4a-4e5f-8a6b-7c8d9e0f1a2b"

var stamp = time.Date(2026, 8, 12, 10, 3, 4, 567e6, time.UTC)

// ev builds a realistic Gemini CLI hook payload (hooks reference): the base
// fields, the event name, a timestamp sec seconds after stamp, and extra.
func ev(name string, sec int, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"session_id":%q,"transcript_path":"/home/ana/.gemini/tmp/5d1e/chats/session-2026-08-12T10-03-%s.json","cwd":"/home/ana/shop","hook_event_name":%q,"timestamp":%q%s}`,
		sid, sid[:8], name, presence.FormatTime(stamp.Add(time.Duration(sec)*time.Second)), extra)
}

var (
	sessionStart = ev("SessionStart", 0, `"source":"startup"`)
	beforeAgent  = ev("BeforeAgent", 1, `"prompt":"SECRET add rounding"`)
	beforeShell  = ev("BeforeTool", 2, `"tool_name":"run_shell_command","tool_input":{"command":"SECRET=1 npm test","description":"Run tests"}`)
	permExec     = ev("Notification", 3, `"notification_type":"ToolPermission","message":"SECRET Tool Run shell command requires execution","details":{"type":"exec","title":"Confirm Shell Command","command":"SECRET=1 npm test","rootCommand":"npm"}`)
	permEdit     = ev("Notification", 3, `"notification_type":"ToolPermission","message":"SECRET","details":{"type":"edit","title":"Confirm Edit: SECRET","fileName":"total.go","filePath":"/home/ana/shop/cart/total.go","fileDiff":"+SECRET"}`)
	permMCP      = ev("Notification", 3, `"notification_type":"ToolPermission","message":"SECRET","details":{"type":"mcp","title":"SECRET","serverName":"github","toolName":"create_issue","toolDisplayName":"Create issue"}`)
	permAsk      = ev("Notification", 3, `"notification_type":"ToolPermission","message":"SECRET","details":{"type":"ask_user","title":"Ask User"}`)
	permKeyed    = ev("Notification", 3, `"notification_type":"ToolPermission","message":"SECRET","details":{"tool_name":"run_shell_command","tool_input":{"description":"Run tests","command":"SECRET=1 npm test"}}`)
	afterShell   = ev("AfterTool", 4, `"tool_name":"run_shell_command","tool_input":{"command":"SECRET=1 npm test","description":"Run tests"},"tool_response":{"llmContent":"SECRET 12 passing","returnDisplay":"SECRET"}`)
	afterRead    = ev("AfterTool", 4, `"tool_name":"read_file","tool_input":{"absolute_path":"/home/ana/shop/a.go"},"tool_response":{"llmContent":"SECRET"}`)
	afterAgent   = ev("AfterAgent", 5, `"prompt":"SECRET","prompt_response":"SECRET done","stop_hook_active":false`)
	sessionEnd   = ev("SessionEnd", 6, `"reason":"exit"`)
	preCompress  = ev("PreCompress", 2, `"trigger":"auto"`)
	beforeModel  = ev("BeforeModel", 2, `"llm_request":{"model":"gemini-2.5-pro","messages":[{"role":"user","content":"SECRET"}]}`)
	afterModel   = ev("AfterModel", 2, `"llm_request":{},"llm_response":{"candidates":[{"content":{"role":"model","parts":["SECRET"]}}]}`)
	otherNote    = ev("Notification", 2, `"notification_type":"OperationComplete","message":"SECRET","details":{}`)
	unknown      = ev("BeforeToolSelection", 2, `"llm_request":{"messages":[]}`)
	noTimestamp  = `{"session_id":"` + sid + `","hook_event_name":"AfterAgent"}`
	badTimestamp = `{"session_id":"` + sid + `","hook_event_name":"AfterAgent","timestamp":"yesterday"}`
)

func attrs(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func key(t *testing.T, payload string) string {
	t.Helper()
	res, err := gemini.New().Decode(at.Input(payload))
	if err != nil {
		t.Fatal(err)
	}
	return res.Events[len(res.Events)-1].AttrString(presence.AttrRequestKey)
}

func TestDecode(t *testing.T) {
	k := key(t, permKeyed)
	if k == "" || k != key(t, afterShell) {
		t.Fatal("a keyed ToolPermission and its AfterTool must share a key")
	}
	at0 := func(sec int) time.Time { return stamp.Add(time.Duration(sec) * time.Second) }
	at.Run(t, gemini.New(), "gemini", []at.Case{
		{Name: "SessionStart", Payload: sessionStart, Native: "SessionStart", Session: sid, TS: at0(0),
			Events: []at.Want{{Type: presence.TypeSessionStart, Session: sid, Attrs: attrs("source", "startup", "cwd", "/home/ana/shop")}},
			Wants:  true, Output: "{}\n"},
		{Name: "SessionStart with peer context", Payload: sessionStart, Native: "SessionStart", Session: sid, TS: at0(0),
			Events: []at.Want{{Type: presence.TypeSessionStart, Session: sid}}, Wants: true, Context: "peers <b>",
			Output: `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"peers \u003cb\u003e"}}` + "\n"},
		{Name: "BeforeAgent with peer context", Payload: beforeAgent, Native: "BeforeAgent", Session: sid, TS: at0(1),
			Events: []at.Want{{Type: presence.TypeUserPromptSubmit, Session: sid}}, Wants: true, Context: "ctx",
			Output: `{"hookSpecificOutput":{"hookEventName":"BeforeAgent","additionalContext":"ctx"}}` + "\n"},
		{Name: "BeforeAgent without context", Payload: beforeAgent, Native: "BeforeAgent", Session: sid, TS: at0(1),
			Events: []at.Want{{Type: presence.TypeUserPromptSubmit, Session: sid}}, Wants: true, Output: "{}\n"},
		{Name: "AfterAgent never blocks for a name", Payload: afterAgent, Native: "AfterAgent", Session: sid, TS: at0(5),
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid}}, Context: "ctx", PendingName: "Agent Flint - t", Output: "{}\n"},
		{Name: "BeforeTool", Payload: beforeShell, Native: "BeforeTool", Session: sid, TS: at0(2),
			Events: []at.Want{{Type: presence.TypeToolPreUse, Session: sid, Attrs: attrs("tool", "run_shell_command")}}, Output: "{}\n"},
		{Name: "ToolPermission without tool args is unkeyed", Payload: permExec, Native: "Notification", Session: sid, TS: at0(3),
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("notification_type", "ToolPermission", "request_key", nil, "summary", "Shell: npm")}}, Output: "{}\n"},
		{Name: "ToolPermission for an edit", Payload: permEdit, Native: "Notification", Session: sid, TS: at0(3),
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("request_key", nil, "summary", "Edit cart/total.go")}}, Output: "{}\n"},
		{Name: "ToolPermission for an MCP tool", Payload: permMCP, Native: "Notification", Session: sid, TS: at0(3),
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("request_key", nil, "summary", "create_issue")}}, Output: "{}\n"},
		{Name: "ToolPermission asking the user", Payload: permAsk, Native: "Notification", Session: sid, TS: at0(3),
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("request_key", nil, "summary", "question")}}, Output: "{}\n"},
		{Name: "ToolPermission naming tool and args is keyed", Payload: permKeyed, Native: "Notification", Session: sid, TS: at0(3),
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("request_key", k, "tool", "run_shell_command", "summary", "run_shell_command")}}, Output: "{}\n"},
		{Name: "other notification is narration", Payload: otherNote, Native: "Notification", Session: sid, TS: at0(2),
			Events: []at.Want{{Type: presence.TypeNarration, Session: sid}}, Output: "{}\n"},
		{Name: "AfterTool resolves", Payload: afterShell, Native: "AfterTool", Session: sid, TS: at0(4),
			Events: []at.Want{
				{Type: presence.TypeToolPostUse, Session: sid, Attrs: attrs("tool", "run_shell_command")},
				{Type: presence.TypeInputResolved, Session: sid, Attrs: attrs("request_key", k)},
			}, Output: "{}\n"},
		{Name: "AfterAgent", Payload: afterAgent, Native: "AfterAgent", Session: sid, TS: at0(5),
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid}}, Output: "{}\n"},
		{Name: "SessionEnd", Payload: sessionEnd, Native: "SessionEnd", Session: sid, TS: at0(6),
			Events: []at.Want{{Type: presence.TypeSessionEnd, Session: sid, Attrs: attrs("reason", "exit")}}, Output: "{}\n"},
		{Name: "PreCompress", Payload: preCompress, Native: "PreCompress", Session: sid, TS: at0(2),
			Events: []at.Want{{Type: presence.TypeNarration, Session: sid, Attrs: attrs("trigger", "auto")}}, Output: "{}\n"},
		{Name: "BeforeModel", Payload: beforeModel, Native: "BeforeModel", Session: sid, TS: at0(2),
			Events: []at.Want{{Type: presence.TypeNarration, Session: sid}}, Output: "{}\n"},
		{Name: "AfterModel", Payload: afterModel, Native: "AfterModel", Session: sid, TS: at0(2),
			Events: []at.Want{{Type: presence.TypeNarration, Session: sid}}, Output: "{}\n"},
		{Name: "unknown event is a diagnostic, not a session", Payload: unknown, Err: true},
		{Name: "no timestamp falls back to Now", Payload: noTimestamp, Native: "AfterAgent", Session: sid,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid, Attrs: attrs("cwd", nil)}}, Output: "{}\n"},
		{Name: "bad timestamp falls back to Now", Payload: badTimestamp, Native: "AfterAgent", Session: sid,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid}}, Output: "{}\n"},
		{Name: "empty", Payload: "", Err: true},
		{Name: "invalid JSON", Payload: "{{", Err: true},
		{Name: "no session", Payload: `{"hook_event_name":"AfterAgent","timestamp":"2026-08-12T10:03:04Z"}`, Err: true},
		{Name: "no event", Payload: `{"session_id":"s"}`, Err: true},
	})
}

func TestFold(t *testing.T) {
	// Unkeyed ToolPermission: no AfterTool answers it (post-tool events
	// never clear needs_input); the next tool or the turn's end does.
	at.Fold(t, gemini.New(), sid, []at.Step{
		{Payload: sessionStart, Want: presence.ActivityIdle},
		{Payload: beforeAgent, Want: presence.ActivityWorking},
		{Payload: beforeShell, Want: presence.ActivityWorking},
		{Payload: permExec, Want: presence.ActivityNeedsInput},
		{Payload: afterShell, Want: presence.ActivityNeedsInput},
		{Payload: ev("AfterTool", 4, `"tool_name":"read_file","tool_input":{}`), Want: presence.ActivityNeedsInput},
		{Payload: ev("BeforeTool", 5, `"tool_name":"read_file","tool_input":{}`), Want: presence.ActivityWorking},
		{Payload: afterAgent, Want: presence.ActivityIdle},
		{Payload: sessionEnd, Want: presence.ActivityIdle},
	})
	at.Fold(t, gemini.New(), sid, []at.Step{
		{Payload: beforeAgent, Want: presence.ActivityWorking},
		{Payload: permEdit, Want: presence.ActivityNeedsInput},
		{Payload: afterShell, Want: presence.ActivityNeedsInput},
		{Payload: afterAgent, Want: presence.ActivityIdle},
	})
	// Keyed: only the matching AfterTool answers it.
	at.Fold(t, gemini.New(), sid, []at.Step{
		{Payload: beforeAgent, Want: presence.ActivityWorking},
		{Payload: permKeyed, Want: presence.ActivityNeedsInput},
		{Payload: ev("AfterTool", 4, `"tool_name":"read_file","tool_input":{}`), Want: presence.ActivityNeedsInput},
		{Payload: ev("AfterTool", 5, `"tool_name":"run_shell_command","tool_input":{"command":"SECRET=1 npm test","description":"Run tests"}`), Want: presence.ActivityWorking},
	})
}

func TestEvents(t *testing.T) {
	for _, name := range gemini.Events() {
		res, err := gemini.New().Decode(at.Input(ev(name, 0, `"notification_type":"ToolPermission"`)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Events[0].Type == presence.TypeCoordination {
			t.Errorf("registered event %s is not mapped", name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	seeds := []string{sessionStart, beforeAgent, beforeShell, permExec, permEdit, permMCP, permAsk, permKeyed, afterShell, afterRead,
		afterAgent, sessionEnd, preCompress, beforeModel, afterModel, otherNote, unknown, noTimestamp,
		badTimestamp, "", `{"session_id":"s","hook_event_name":"AfterAgent","timestamp":"0000-01-01T00:00:00Z"}`}
	at.Fuzz(f, []adapter.Adapter{gemini.New()}, seeds)
}
