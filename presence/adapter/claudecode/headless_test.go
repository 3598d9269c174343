package claudecode

import (
	"errors"
	"reflect"
	"testing"

	"github.com/harn-dev/harn/presence/adapter"
)

func TestDecodeClaudeStreamJSON(t *testing.T) {
	cases := []struct {
		name string
		line string
		want []adapter.Output
		err  error
	}{
		{"init", `{"type":"system","subtype":"init","session_id":"x","tools":["Bash"]}`, nil, nil},
		{"assistant text", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}}`,
			[]adapter.Output{{Kind: adapter.OutputText, Text: "hi"}}, nil},
		{"assistant string content", `{"type":"assistant","message":{"content":"plain"}}`,
			[]adapter.Output{{Kind: adapter.OutputText, Text: "plain"}}, nil},
		{"thinking is not shown", `{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"secret"},{"type":"text","text":" "}]}}`, nil, nil},
		{"tool use", `{"type":"assistant","message":{"content":[{"type":"text","text":"run"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}`,
			[]adapter.Output{{Kind: adapter.OutputText, Text: "run"}, {Kind: adapter.OutputToolUse, ToolID: "toolu_1", ToolName: "Bash"}}, nil},
		{"tool result", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"x"}]}}`,
			[]adapter.Output{{Kind: adapter.OutputToolResult, ToolID: "toolu_1", IsError: true}}, nil},
		{"user text is not the agent's", `{"type":"user","message":{"content":"steer"}}`, nil, nil},
		{"result", `{"type":"result","subtype":"success","is_error":false,"result":"all done","total_cost_usd":0.1}`,
			[]adapter.Output{{Kind: adapter.OutputResult, Text: "all done"}}, nil},
		{"error result", `{"type":"result","subtype":"error_max_turns","is_error":false}`,
			[]adapter.Output{{Kind: adapter.OutputResult, IsError: true}}, nil},
		{"unknown type", `{"type":"stream_event","event":{}}`, nil, nil},
		{"not json", `Error: not logged in`, nil, adapter.ErrBadLine},
		{"bad content", `{"type":"assistant","message":{"content":7}}`, nil, adapter.ErrBadLine},
		{"invalid utf-8 is made valid", "{\"type\":\"assistant\",\"message\":{\"content\":\"a\xffb\"}}",
			[]adapter.Output{{Kind: adapter.OutputText, Text: "a\uFFFDb"}}, nil},
	}
	for _, c := range cases {
		got, err := DecodeStream([]byte(c.line))
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", c.name, got, err, c.want, c.err)
		}
	}
}
