package codex

import (
	"strings"

	"github.com/harn-dev/harn/presence/adapter"
)

// Argv is Codex's default command line as a task's command: `codex exec
// --json`, the prompt on stdin.
var Argv = []string{"codex", "exec", "--json", "-"}

// Headless is Codex run under argv (adapter.Driven): the prompt on stdin,
// then EOF (a steer becomes a follow-up); with `--json` (or
// `--experimental-json`) its output is read as JSON lines (DecodeJSON),
// else as text. An empty argv runs Argv.
func (hooks) Headless(argv []string) adapter.Headless {
	if len(argv) == 0 {
		argv = Argv
	}
	h := adapter.Headless{Driver: "codex", Argv: append([]string(nil), argv...)}
	for _, a := range argv[1:] {
		if a == "--json" || a == "--experimental-json" {
			h.Decode = DecodeJSON
		}
	}
	return h
}

// jsonLine is the part of a `codex exec --json` line harn reads, in the
// current thread/turn/item form and in the older {"msg": …} form.
type jsonLine struct {
	Type    string    `json:"type"`
	Item    *jsonItem `json:"item"`
	Message string    `json:"message"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
	Msg *struct {
		Type             string `json:"type"`
		Message          string `json:"message"`
		LastAgentMessage string `json:"last_agent_message"`
	} `json:"msg"`
}

type jsonItem struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	ItemType string `json:"item_type"`
	Text     string `json:"text"`
	Status   string `json:"status"`
	Tool     string `json:"tool"`
}

// DecodeJSON reads one line of `codex exec --json`: a completed
// agent_message item is a message; command, patch and MCP items start and
// end calls; turn.completed and turn.failed end the turn; error lines are
// errors. The older form ({"msg":{"type":"agent_message"…}} and
// task_complete) is read too.
func DecodeJSON(line []byte) ([]adapter.Output, error) {
	var l jsonLine
	if err := adapter.DecodeLine(line, &l); err != nil {
		return nil, err
	}
	one := func(o adapter.Output) ([]adapter.Output, error) { return []adapter.Output{o}, nil }
	if l.Msg != nil && l.Type == "" {
		switch l.Msg.Type {
		case "agent_message":
			if strings.TrimSpace(l.Msg.Message) != "" {
				return one(adapter.Output{Kind: adapter.OutputText, Text: l.Msg.Message})
			}
		case "task_complete":
			return one(adapter.Output{Kind: adapter.OutputResult, Text: l.Msg.LastAgentMessage})
		case "error":
			return one(adapter.Output{Kind: adapter.OutputError, Text: l.Msg.Message})
		}
		return nil, nil
	}
	switch l.Type {
	case "item.started", "item.completed":
		if l.Item == nil {
			return nil, nil
		}
		typ := l.Item.Type
		if typ == "" {
			typ = l.Item.ItemType
		}
		switch typ {
		case "agent_message", "assistant_message":
			if l.Type == "item.completed" && strings.TrimSpace(l.Item.Text) != "" {
				return one(adapter.Output{Kind: adapter.OutputText, Text: l.Item.Text})
			}
		case "command_execution", "file_change", "mcp_tool_call", "web_search":
			if l.Item.ID == "" {
				return nil, nil
			}
			name := typ
			if l.Item.Tool != "" {
				name = l.Item.Tool
			}
			o := adapter.Output{Kind: adapter.OutputToolUse, ToolID: l.Item.ID, ToolName: name}
			if l.Type == "item.completed" {
				o.Kind, o.IsError = adapter.OutputToolResult, l.Item.Status == "failed"
			}
			return one(o)
		}
	case "turn.completed":
		return one(adapter.Output{Kind: adapter.OutputResult})
	case "turn.failed":
		o := adapter.Output{Kind: adapter.OutputResult, IsError: true}
		if l.Error != nil {
			o.Text = l.Error.Message
		}
		return one(o)
	case "error":
		return one(adapter.Output{Kind: adapter.OutputError, Text: l.Message})
	}
	return nil, nil
}
