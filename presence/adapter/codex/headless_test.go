package codex

import (
	"errors"
	"reflect"
	"testing"

	"github.com/harn-dev/harn/presence/adapter"
)

func TestDecodeCodexJSON(t *testing.T) {
	cases := []struct {
		name string
		line string
		want []adapter.Output
		err  error
	}{
		{"thread", `{"type":"thread.started","thread_id":"t"}`, nil, nil},
		{"message", `{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"hello"}}`,
			[]adapter.Output{{Kind: adapter.OutputText, Text: "hello"}}, nil},
		{"older item_type", `{"type":"item.completed","item":{"id":"item_1","item_type":"assistant_message","text":"hello"}}`,
			[]adapter.Output{{Kind: adapter.OutputText, Text: "hello"}}, nil},
		{"reasoning is not shown", `{"type":"item.completed","item":{"id":"i","type":"reasoning","text":"hmm"}}`, nil, nil},
		{"command starts", `{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"ls","status":"in_progress"}}`,
			[]adapter.Output{{Kind: adapter.OutputToolUse, ToolID: "item_2", ToolName: "command_execution"}}, nil},
		{"mcp fails", `{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","tool":"search","status":"failed"}}`,
			[]adapter.Output{{Kind: adapter.OutputToolResult, ToolID: "item_3", ToolName: "search", IsError: true}}, nil},
		{"turn done", `{"type":"turn.completed","usage":{"input_tokens":1}}`, []adapter.Output{{Kind: adapter.OutputResult}}, nil},
		{"turn failed", `{"type":"turn.failed","error":{"message":"quota"}}`,
			[]adapter.Output{{Kind: adapter.OutputResult, Text: "quota", IsError: true}}, nil},
		{"error", `{"type":"error","message":"stream lost"}`, []adapter.Output{{Kind: adapter.OutputError, Text: "stream lost"}}, nil},
		{"old message", `{"id":"0","msg":{"type":"agent_message","message":"hey"}}`, []adapter.Output{{Kind: adapter.OutputText, Text: "hey"}}, nil},
		{"old complete", `{"id":"0","msg":{"type":"task_complete","last_agent_message":"bye"}}`,
			[]adapter.Output{{Kind: adapter.OutputResult, Text: "bye"}}, nil},
		{"not json", `[1,2]`, nil, adapter.ErrBadLine},
	}
	for _, c := range cases {
		got, err := DecodeJSON([]byte(c.line))
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", c.name, got, err, c.want, c.err)
		}
	}
}
