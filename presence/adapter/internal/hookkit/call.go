package hookkit

import (
	"encoding/json"

	"github.com/harn-dev/harn/presence/adapter"
)

// CallFields is what the decision path reads of a tool call's payload, in
// every agent's spelling.
type CallFields struct {
	Event     string          `json:"hook_event_name"`
	Session   string          `json:"session_id"`
	Conv      string          `json:"conversation_id"`
	Tool      string          `json:"tool_name"`
	Input     json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
	Command   string          `json:"command"` // Cursor's beforeShellExecution
	Server    string          `json:"server"`  // Cursor's beforeMCPExecution
	// Cwd and Roots (Cursor's workspace_roots) are read leniently: a
	// value of another type fails no call.
	Cwd   json.RawMessage `json:"cwd"`
	Roots json.RawMessage `json:"workspace_roots"`
}

// dir is the payload's working directory: cwd, else the first workspace
// root, else "".
func (p CallFields) dir() string {
	var s string
	if json.Unmarshal(p.Cwd, &s) == nil && s != "" {
		return s
	}
	var roots []string
	if json.Unmarshal(p.Roots, &roots) == nil && len(roots) > 0 {
		return roots[0]
	}
	return ""
}

// ReadCall decodes stdin's call fields: the Call without a phase, and the
// fields as given. ok is false for an empty payload or one that is not a
// JSON object.
func ReadCall(stdin []byte) (adapter.Call, CallFields, bool) {
	var p CallFields
	if len(stdin) == 0 || json.Unmarshal(stdin, &p) != nil {
		return adapter.Call{}, p, false
	}
	c := adapter.Call{Event: p.Event, Session: p.Session, Tool: p.Tool, Input: p.Input, ID: p.ToolUseID, Cwd: p.dir()}
	if c.Session == "" {
		c.Session = p.Conv
	}
	return c, p, true
}

// Answer is v as one line of JSON: the form every agent reads a hook's
// answer in.
func Answer(v any) []byte {
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// SystemMessage is a warning shown to the agent without stopping it
// ({"systemMessage": ...}: Claude Code, Codex and Gemini CLI read it).
func SystemMessage(reason string) []byte {
	return Answer(map[string]string{"systemMessage": reason})
}
