package codex_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/codex"
	at "github.com/harn-dev/harn/presence/adapter/internal/adaptertest"
)

// Realistic Codex hook payloads (hooks.json command hooks, Codex 0.14x).
const (
	sid    = "019a3c4e-7f21-7b40-9d1e-5c2a8e0f6b13"
	child  = "019a3c52-0b9e-7c11-8a44-2e7d90c3f5aa"
	common = `"session_id":"` + sid + `","transcript_path":"/home/ana/.codex/sessions/2026/08/12/rollout-2026-08-12T10-02-00-` + sid + `.jsonl","cwd":"/home/ana/shop","model":"gpt-5.3-codex","permission_mode":"default"`
	turn   = `"turn_id":"019a3c4f-1111-7000-8000-000000000001"`

	sessionStart = `{` + common + `,"hook_event_name":"SessionStart","source":"startup"}`
	promptSubmit = `{` + common + `,` + turn + `,"hook_event_name":"UserPromptSubmit","prompt":"SECRET refactor the cart"}`
	preBash      = `{` + common + `,` + turn + `,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"SECRET=1 go test ./cart/..."},"tool_use_id":"call_Xa81"}`
	patch        = "*** Begin Patch\n*** Update File: cart/total.go\n@@\n-SECRET old\n+SECRET new\n*** Add File: /home/ana/shop/cart/round.go\n+package cart\n*** Delete File: cart/legacy.go\n*** Update File: cart/tax.go\n*** Move to: cart/taxes.go\n@@\n-a\n+b\n*** End Patch\n"
	preApply     = `{` + common + `,` + turn + `,"hook_event_name":"PreToolUse","tool_name":"apply_patch","tool_input":{"command":` + "%s" + `},"tool_use_id":"call_Pq02"}`
	permRequest  = `{` + common + `,` + turn + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"git push origin main SECRET","description":"Push the branch"}}`
	postBash     = `{` + common + `,` + turn + `,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"description":"Push the branch","command":"git push origin main SECRET"},"tool_response":"SECRET To github.com:ana/shop.git","tool_use_id":"call_Yb33"}`
	postTests    = `{` + common + `,` + turn + `,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"SECRET=1 go test ./cart/..."},"tool_response":"ok","tool_use_id":"call_Xa81"}`
	preCompact   = `{` + common + `,"hook_event_name":"PreCompact","trigger":"auto"}`
	postCompact  = `{` + common + `,"hook_event_name":"PostCompact","trigger":"auto"}`
	subStart     = `{` + common + `,"hook_event_name":"SubagentStart","source":"startup","agent_id":"` + child + `","agent_type":"explorer"}`
	subPre       = `{` + common + `,` + turn + `,"hook_event_name":"PreToolUse","agent_id":"` + child + `","agent_type":"explorer","tool_name":"Bash","tool_input":{"command":"rg SECRET"},"tool_use_id":"call_Zc44"}`
	subStop      = `{` + common + `,` + turn + `,"hook_event_name":"SubagentStop","agent_id":"` + child + `","agent_type":"explorer","agent_transcript_path":"/home/ana/.codex/sessions/x.jsonl","stop_hook_active":false,"last_assistant_message":"SECRET"}`
	stop         = `{` + common + `,` + turn + `,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"SECRET All tests pass."}`
	sessionEnd   = `{` + common + `,"hook_event_name":"SessionEnd","reason":"exit"}`
	unknown      = `{` + common + `,"hook_event_name":"TaskRequested","future":true}`
	minimal      = `{"session_id":"` + sid + `","hook_event_name":"Stop"}`

	permApply     = `{` + common + `,` + turn + `,"hook_event_name":"PermissionRequest","tool_name":"apply_patch","tool_input":{"command":["apply_patch","*** Begin Patch\n*** Update File: cart/total.go\n-SECRET\n*** End Patch"]}}`
	permArgv      = `{` + common + `,` + turn + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":["SECRET=x","make"]}}`
	transcript    = "/home/ana/.codex/sessions/2026/08/12/rollout-2026-08-12T10-02-00-" + sid + ".jsonl"
	notifyTurn    = `{"type":"agent-turn-complete","thread-id":"` + sid + `","turn-id":"12","cwd":"/home/ana/shop","input-messages":["SECRET prompt"],"last-assistant-message":"SECRET answer"}`
	notifyUnknown = `{"type":"approval-requested","thread-id":"` + sid + `","cwd":"/home/ana/shop"}`
)

func applyWith(input any) string {
	b, _ := json.Marshal(input)
	return fmt.Sprintf(preApply, b)
}

func attrs(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

var patched = []string{"/home/ana/shop/cart/total.go", "/home/ana/shop/cart/round.go", "/home/ana/shop/cart/legacy.go", "/home/ana/shop/cart/tax.go", "/home/ana/shop/cart/taxes.go"}

func requestKey(t *testing.T, payload string) string {
	t.Helper()
	res, err := codex.New().Decode(at.Input(payload))
	if err != nil {
		t.Fatal(err)
	}
	return res.Events[len(res.Events)-1].AttrString(presence.AttrInputKey)
}

func TestDecode(t *testing.T) {
	k := requestKey(t, permRequest)
	if k == "" || k != requestKey(t, postBash) {
		t.Fatal("PermissionRequest and its PostToolUse must share a non-empty input key")
	}
	applyObj := strings.Replace(fmt.Sprintf(preApply, "null"), `{"command":null}`, `{"input":`+mustJSON(patch)+`}`, 1)
	at.Run(t, codex.New(), "codex", []at.Case{
		{Name: "SessionStart", Payload: sessionStart, Native: "SessionStart", Session: sid,
			Events: []at.Want{{Type: presence.TypeSessionStart, Session: sid, Attrs: attrs("source", "startup", "cwd", "/home/ana/shop")}}},
		{Name: "UserPromptSubmit", Payload: promptSubmit, Native: "UserPromptSubmit", Session: sid, Wants: true,
			Events:  []at.Want{{Type: presence.TypeUserPromptSubmit, Session: sid, Attrs: attrs("transcript_path", transcript)}},
			Context: "peer context",
			Output:  `{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"peer context"}}` + "\n"},
		{Name: "PreToolUse Bash", Payload: preBash, Native: "PreToolUse", Session: sid,
			Events: []at.Want{{Type: presence.TypeToolPreUse, Session: sid, Attrs: attrs("tool", "Bash")}}},
		{Name: "apply_patch command string claims every header", Payload: applyWith(patch), Native: "PreToolUse", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPreUse, Session: sid, Attrs: attrs("tool", "apply_patch")},
				{Type: presence.TypeClaimWrite, Session: sid, Attrs: attrs("paths", patched, "tool", "apply_patch")},
			}},
		{Name: "apply_patch argv array", Payload: applyWith([]string{"apply_patch", patch}), Native: "PreToolUse", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPreUse, Session: sid},
				{Type: presence.TypeClaimWrite, Session: sid, Attrs: attrs("paths", patched)},
			}},
		{Name: "apply_patch heredoc through a shell", Payload: applyWith([]string{"bash", "-lc", "apply_patch <<'EOF'\n" + patch + "EOF\n"}), Native: "PreToolUse", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPreUse, Session: sid},
				{Type: presence.TypeClaimWrite, Session: sid, Attrs: attrs("paths", patched)},
			}},
		{Name: "apply_patch tool_input.input", Payload: applyObj, Native: "PreToolUse", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPreUse, Session: sid},
				{Type: presence.TypeClaimWrite, Session: sid, Attrs: attrs("paths", patched)},
			}},
		{Name: "apply_patch without headers claims nothing", Payload: applyWith("*** Begin Patch\n*** End Patch"), Native: "PreToolUse", Session: sid,
			Events: []at.Want{{Type: presence.TypeToolPreUse, Session: sid}}},
		{Name: "PermissionRequest", Payload: permRequest, Native: "PermissionRequest", Session: sid,
			Events:  []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("tool", "Bash", "request_key", k, "summary", "Bash: git")}},
			Context: "ctx", Output: ""},
		{Name: "PermissionRequest for a patch names its first file", Payload: permApply, Native: "PermissionRequest", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("tool", "apply_patch", "summary", "apply_patch cart/total.go")}}},
		{Name: "PermissionRequest with an argv never shows a variable", Payload: permArgv, Native: "PermissionRequest", Session: sid,
			Events: []at.Want{{Type: presence.TypeInputRequested, Session: sid, Attrs: attrs("summary", "Bash")}}},
		{Name: "PostToolUse resolves", Payload: postBash, Native: "PostToolUse", Session: sid,
			Events: []at.Want{
				{Type: presence.TypeToolPostUse, Session: sid},
				{Type: presence.TypeInputResolved, Session: sid, Attrs: attrs("input_key", k, "request_key", "call:call_Yb33", "call_key", "call:call_Yb33")},
			}},
		{Name: "PreCompact", Payload: preCompact, Native: "PreCompact", Session: sid,
			Events: []at.Want{{Type: presence.TypeNarration, Session: sid, Attrs: attrs("trigger", "auto")}}},
		{Name: "PostCompact", Payload: postCompact, Native: "PostCompact", Session: sid,
			Events: []at.Want{{Type: presence.TypeNarration, Session: sid}}},
		{Name: "SubagentStart", Payload: subStart, Native: "SubagentStart", Session: child,
			Events: []at.Want{{Type: presence.TypeSubagentStart, Session: child, Parent: sid, Attrs: attrs("agent_type", "explorer")}}},
		{Name: "tool inside a subagent", Payload: subPre, Native: "PreToolUse", Session: child,
			Events: []at.Want{{Type: presence.TypeToolPreUse, Session: child, Parent: sid}}},
		{Name: "SubagentStop", Payload: subStop, Native: "SubagentStop", Session: child,
			Events: []at.Want{{Type: presence.TypeSubagentStop, Session: child, Parent: sid}}},
		{Name: "Stop", Payload: stop, Native: "Stop", Session: sid,
			Events:      []at.Want{{Type: presence.TypeTurnStop, Session: sid, Attrs: attrs("transcript_path", transcript)}},
			PendingName: "Agent Flint - t", Output: ""},
		{Name: "SessionEnd", Payload: sessionEnd, Native: "SessionEnd", Session: sid,
			Events: []at.Want{{Type: presence.TypeSessionEnd, Session: sid, Attrs: attrs("reason", "exit")}}},
		{Name: "unknown event is a diagnostic, not a session", Payload: unknown, Err: true},
		{Name: "missing optional fields", Payload: minimal, Native: "Stop", Session: sid,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid, Attrs: attrs("cwd", nil)}}},
		{Name: "empty", Payload: "", Err: true},
		{Name: "invalid JSON", Payload: "{", Err: true},
		{Name: "no session", Payload: `{"hook_event_name":"Stop"}`, Err: true},
		{Name: "SubagentStop without agent_id", Payload: `{` + common + `,"hook_event_name":"SubagentStop"}`, Err: true},
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestNotify(t *testing.T) {
	at.Run(t, codex.NewNotify(), "codex", []at.Case{
		{Name: "agent-turn-complete", Args: []string{notifyTurn}, Native: "agent-turn-complete", Session: sid,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid, Attrs: attrs("cwd", "/home/ana/shop")}}},
		{Name: "JSON is the last argument; stdin ignored", Payload: "garbage", Args: []string{"--flag", notifyTurn}, Native: "agent-turn-complete", Session: sid,
			Events: []at.Want{{Type: presence.TypeTurnStop, Session: sid}}, Context: "ctx", Output: ""},
		{Name: "other notify types are stored", Args: []string{notifyUnknown}, Native: "approval-requested", Session: sid,
			Events: []at.Want{{Type: presence.TypeCoordination, Session: sid}}},
		{Name: "no arguments", Payload: notifyTurn, Err: true},
		{Name: "no thread", Args: []string{`{"type":"agent-turn-complete"}`}, Err: true},
		{Name: "no type", Args: []string{`{"thread-id":"t1"}`}, Err: true},
		{Name: "not JSON", Args: []string{"agent-turn-complete"}, Err: true},
	})
}

func TestPatchPaths(t *testing.T) {
	got := codex.PatchPaths(patch)
	want := []string{"cart/total.go", "/home/ana/shop/cart/round.go", "cart/legacy.go", "cart/tax.go", "cart/taxes.go"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PatchPaths = %q; want %q", got, want)
	}
}

func TestHugePatchSplitsClaims(t *testing.T) {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	for i := range presence.MaxPathsPerClaim + 44 {
		fmt.Fprintf(&b, "*** Add File: gen/f%03d.go\n+package gen\n", i)
	}
	b.WriteString("*** End Patch\n")
	res, err := codex.New().Decode(at.Input(applyWith(b.String())))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range res.Events {
		if e.Type == presence.TypeClaimWrite {
			if len(e.AttrStrings("paths")) > presence.MaxPathsPerClaim {
				t.Fatalf("claim names %d paths", len(e.AttrStrings("paths")))
			}
			n += len(e.AttrStrings("paths"))
		}
	}
	if n != presence.MaxPathsPerClaim+44 || len(res.Events) != 3 {
		t.Fatalf("claimed %d paths in %s; want %d in two claims", n, at.Types(res.Events), presence.MaxPathsPerClaim+44)
	}
}

func TestFold(t *testing.T) {
	at.Fold(t, codex.New(), sid, []at.Step{
		{Payload: sessionStart, Want: presence.ActivityIdle},
		{Payload: promptSubmit, Want: presence.ActivityWorking},
		{Payload: preBash, Want: presence.ActivityWorking},
		{Payload: permRequest, Want: presence.ActivityNeedsInput},
		{Payload: postTests, Want: presence.ActivityNeedsInput},
		{Payload: postBash, Want: presence.ActivityWorking},
		{Payload: applyWith(patch), Want: presence.ActivityWorking},
		{Payload: stop, Want: presence.ActivityIdle},
	})
	at.Fold(t, codex.NewNotify(), sid, []at.Step{
		{Args: []string{notifyTurn}, Want: presence.ActivityIdle},
	})
}

func TestEvents(t *testing.T) {
	for _, ev := range codex.Events() {
		res, err := codex.New().Decode(at.Input(`{` + common + `,"hook_event_name":"` + ev + `","agent_id":"` + child + `"}`))
		if err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
		if res.Events[0].Type == presence.TypeCoordination {
			t.Errorf("registered event %s is not mapped", ev)
		}
	}
}

func FuzzDecode(f *testing.F) {
	seeds := []string{sessionStart, promptSubmit, permApply, permArgv, preBash, applyWith(patch), applyWith([]string{"apply_patch", patch}),
		permRequest, postBash, postTests, preCompact, postCompact, subStart, subPre, subStop, stop, sessionEnd,
		unknown, minimal, notifyTurn, notifyUnknown, "", "{}"}
	at.Fuzz(f, []adapter.Adapter{codex.New(), codex.NewNotify()}, seeds)
}
