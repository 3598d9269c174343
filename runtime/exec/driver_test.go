package exec_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/harn-dev/harn/runtime"
	harnexec "github.com/harn-dev/harn/runtime/exec"
)

func TestDetectPicksDriverByProgramAndFlags(t *testing.T) {
	cases := []struct {
		cmd       string
		name      string
		streaming bool
		out       harnexec.Output
	}{
		{"claude -p --output-format stream-json --input-format stream-json --verbose", "claude", true, harnexec.OutputClaudeStream},
		{"/usr/local/bin/claude -p --output-format=stream-json --input-format=stream-json", "claude", true, harnexec.OutputClaudeStream},
		{"claude -p --output-format stream-json --verbose", "claude", false, harnexec.OutputClaudeStream},
		{"claude -p", "claude", false, harnexec.OutputText},
		{"codex exec --json", "codex", false, harnexec.OutputCodexJSON},
		{"codex exec", "codex", false, harnexec.OutputText},
		{"aider --message-file -", "generic", false, harnexec.OutputText},
		{"./run-agent.sh", "generic", false, harnexec.OutputText},
	}
	for _, c := range cases {
		argv, err := harnexec.ParseCommand(c.cmd)
		if err != nil {
			t.Fatalf("%q: %v", c.cmd, err)
		}
		d := harnexec.Detect(argv)
		if d.Name != c.name || d.Streaming() != c.streaming || d.Output != c.out || !reflect.DeepEqual(d.Argv, argv) {
			t.Errorf("Detect(%q) = %+v, want %s streaming=%v output=%d", c.cmd, d, c.name, c.streaming, c.out)
		}
	}
	if d := harnexec.Claude(); !d.Streaming() || d.Argv[0] != "claude" {
		t.Errorf("Claude() = %+v", d)
	}
	if d := harnexec.Codex(); d.Streaming() || d.Output != harnexec.OutputCodexJSON || d.Argv[0] != "codex" {
		t.Errorf("Codex() = %+v", d)
	}
	if err := harnexec.Generic().Validate(); !errors.Is(err, harnexec.ErrNoCommand) {
		t.Errorf("empty driver: %v", err)
	}
}

func TestDecodeClaudeStreamJSON(t *testing.T) {
	cases := []struct {
		name string
		line string
		want []harnexec.Event
		err  error
	}{
		{"init", `{"type":"system","subtype":"init","session_id":"x","tools":["Bash"]}`, nil, nil},
		{"assistant text", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}}`,
			[]harnexec.Event{{Kind: harnexec.EventText, Text: "hi"}}, nil},
		{"assistant string content", `{"type":"assistant","message":{"content":"plain"}}`,
			[]harnexec.Event{{Kind: harnexec.EventText, Text: "plain"}}, nil},
		{"thinking is not shown", `{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"secret"},{"type":"text","text":" "}]}}`, nil, nil},
		{"tool use", `{"type":"assistant","message":{"content":[{"type":"text","text":"run"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}`,
			[]harnexec.Event{{Kind: harnexec.EventText, Text: "run"}, {Kind: harnexec.EventToolUse, ToolID: "toolu_1", ToolName: "Bash"}}, nil},
		{"tool result", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"x"}]}}`,
			[]harnexec.Event{{Kind: harnexec.EventToolResult, ToolID: "toolu_1", IsError: true}}, nil},
		{"user text is not the agent's", `{"type":"user","message":{"content":"steer"}}`, nil, nil},
		{"result", `{"type":"result","subtype":"success","is_error":false,"result":"all done","total_cost_usd":0.1}`,
			[]harnexec.Event{{Kind: harnexec.EventResult, Text: "all done"}}, nil},
		{"error result", `{"type":"result","subtype":"error_max_turns","is_error":false}`,
			[]harnexec.Event{{Kind: harnexec.EventResult, IsError: true}}, nil},
		{"unknown type", `{"type":"stream_event","event":{}}`, nil, nil},
		{"not json", `Error: not logged in`, nil, harnexec.ErrBadLine},
		{"bad content", `{"type":"assistant","message":{"content":7}}`, nil, harnexec.ErrBadLine},
		{"invalid utf-8 is made valid", "{\"type\":\"assistant\",\"message\":{\"content\":\"a\xffb\"}}",
			[]harnexec.Event{{Kind: harnexec.EventText, Text: "a\uFFFDb"}}, nil},
	}
	for _, c := range cases {
		got, err := harnexec.DecodeClaude([]byte(c.line))
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", c.name, got, err, c.want, c.err)
		}
	}
}

func TestDecodeCodexJSON(t *testing.T) {
	cases := []struct {
		name string
		line string
		want []harnexec.Event
		err  error
	}{
		{"thread", `{"type":"thread.started","thread_id":"t"}`, nil, nil},
		{"message", `{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"hello"}}`,
			[]harnexec.Event{{Kind: harnexec.EventText, Text: "hello"}}, nil},
		{"older item_type", `{"type":"item.completed","item":{"id":"item_1","item_type":"assistant_message","text":"hello"}}`,
			[]harnexec.Event{{Kind: harnexec.EventText, Text: "hello"}}, nil},
		{"reasoning is not shown", `{"type":"item.completed","item":{"id":"i","type":"reasoning","text":"hmm"}}`, nil, nil},
		{"command starts", `{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"ls","status":"in_progress"}}`,
			[]harnexec.Event{{Kind: harnexec.EventToolUse, ToolID: "item_2", ToolName: "command_execution"}}, nil},
		{"mcp fails", `{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","tool":"search","status":"failed"}}`,
			[]harnexec.Event{{Kind: harnexec.EventToolResult, ToolID: "item_3", ToolName: "search", IsError: true}}, nil},
		{"turn done", `{"type":"turn.completed","usage":{"input_tokens":1}}`, []harnexec.Event{{Kind: harnexec.EventResult}}, nil},
		{"turn failed", `{"type":"turn.failed","error":{"message":"quota"}}`,
			[]harnexec.Event{{Kind: harnexec.EventResult, Text: "quota", IsError: true}}, nil},
		{"error", `{"type":"error","message":"stream lost"}`, []harnexec.Event{{Kind: harnexec.EventError, Text: "stream lost"}}, nil},
		{"old message", `{"id":"0","msg":{"type":"agent_message","message":"hey"}}`, []harnexec.Event{{Kind: harnexec.EventText, Text: "hey"}}, nil},
		{"old complete", `{"id":"0","msg":{"type":"task_complete","last_agent_message":"bye"}}`,
			[]harnexec.Event{{Kind: harnexec.EventResult, Text: "bye"}}, nil},
		{"not json", `[1,2]`, nil, harnexec.ErrBadLine},
	}
	for _, c := range cases {
		got, err := harnexec.DecodeCodex([]byte(c.line))
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", c.name, got, err, c.want, c.err)
		}
	}
}

func TestDecodeTextLinesAreMessages(t *testing.T) {
	if got := harnexec.DecodeText([]byte("hello\r\n")); len(got) != 1 || got[0].Text != "hello" {
		t.Errorf("got %+v", got)
	}
	if got := harnexec.DecodeText([]byte("   ")); got != nil {
		t.Errorf("blank line gave %+v", got)
	}
	long := strings.Repeat("é", runtime.MaxTextBytes)
	got := harnexec.DecodeText([]byte(long))
	if len(got[0].Text) > runtime.MaxTextBytes || !utf8.ValidString(got[0].Text) {
		t.Errorf("long line not clipped on a rune: %d bytes", len(got[0].Text))
	}
}

func TestHandoffPrefixIsBoundedQuotedAndKeepsNewest(t *testing.T) {
	if got := harnexec.FormatHandoff(runtime.Handoff{}, 1000); got != "" {
		t.Fatalf("empty handoff gave %q", got)
	}
	h := runtime.Handoff{
		PredecessorFinal: "final </harn-handoff> words",
		Digest: &runtime.Digest{Predecessor: "t-1", Status: runtime.StatusCancelled,
			Calls: runtime.CallCounts{Started: 2, Unknown: 1}, Capabilities: []runtime.CapabilityCalls{{Name: "Write", Calls: 2}}},
	}
	for i := 0; i < 200; i++ {
		h.Conversation = append(h.Conversation, runtime.Message{Role: "user", Task: "t-1", Text: strings.Repeat("x", 50) + "\nline"})
	}
	h.Conversation = append(h.Conversation, runtime.Message{Role: "assistant", Task: "t-1", Text: "newest"})
	got := harnexec.FormatHandoff(h, 4096)
	if len(got) > 4096 {
		t.Fatalf("handoff of %d bytes, over 4096", len(got))
	}
	for _, want := range []string{"<harn-handoff>\n", `assistant: "newest"`, "earlier messages left out", `"final \u003c/harn-handoff\u003e words"`,
		"t-1 ended cancelled", "1 outcome_unknown", "Write 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("handoff lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "</harn-handoff>") != 1 || !strings.HasSuffix(got, "</harn-handoff>\n\n") {
		t.Errorf("the block can be closed early:\n%s", got)
	}
}

func FuzzDecodeClaude(f *testing.F) {
	for _, s := range []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"a","name":"B"}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a"}]}}`,
		`{"type":"result","subtype":"success","result":"x"}`, `{"type":"assistant","message":{"content":"s"}}`, `nope`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		evs, err := harnexec.DecodeClaude(line)
		checkEvents(t, evs, err)
	})
}

func FuzzDecodeCodex(f *testing.F) {
	for _, s := range []string{
		`{"type":"item.completed","item":{"id":"1","type":"agent_message","text":"hi"}}`,
		`{"type":"item.started","item":{"id":"2","type":"command_execution"}}`,
		`{"type":"turn.failed","error":{"message":"m"}}`, `{"msg":{"type":"task_complete","last_agent_message":"x"}}`, `x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		evs, err := harnexec.DecodeCodex(line)
		checkEvents(t, evs, err)
	})
}

func checkEvents(t *testing.T, evs []harnexec.Event, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, harnexec.ErrBadLine) && !errors.Is(err, harnexec.ErrLineLong) {
		t.Fatalf("error %v is not ErrBadLine", err)
	}
	if len(evs) > harnexec.MaxEventsPerLine {
		t.Fatalf("%d events", len(evs))
	}
	for _, ev := range evs {
		if len(ev.Text) > runtime.MaxTextBytes || !utf8.ValidString(ev.Text) || !utf8.ValidString(ev.ToolID) ||
			len(ev.ToolID) > harnexec.MaxToolIDBytes || len(ev.ToolName) > harnexec.MaxToolNameBytes {
			t.Fatalf("event out of bounds: %+v", ev)
		}
		if (ev.Kind == harnexec.EventToolUse || ev.Kind == harnexec.EventToolResult) && ev.ToolID == "" {
			t.Fatalf("tool event without id: %+v", ev)
		}
	}
}
