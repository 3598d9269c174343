package gemini

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/internal/hookkit"
)

// PlanCall reads a tool call's hook (adapter.Planner): BeforeTool asks
// before the call, AfterTool after it.
func (gemini) PlanCall(stdin []byte, _ bool) (adapter.Call, bool) {
	c, _, ok := hookkit.ReadCall(stdin)
	if !ok {
		return c, false
	}
	switch c.Event {
	case BeforeTool:
		c.Phase = adapter.PhasePre
	case AfterTool:
		c.Phase = adapter.PhasePost
	}
	return c, true
}

// writeTools are Gemini CLI's write tools. The adapter emits no claim
// events for them; Writes reads their file from the payload.
var writeTools = []string{"write_file", "replace"}

// Writes is the file a BeforeTool of write_file or replace writes, made
// absolute against the payload's cwd (adapter.Planner).
func (gemini) Writes(stdin []byte, evs []presence.Event) adapter.Writes {
	w := adapter.ClaimedWrites(evs)
	var p struct {
		Event   string `json:"hook_event_name"`
		Session string `json:"session_id"`
		Cwd     string `json:"cwd"`
		Tool    string `json:"tool_name"`
		Input   struct {
			FilePath string `json:"file_path"`
		} `json:"tool_input"`
	}
	_ = json.Unmarshal(stdin, &p)
	if p.Event == BeforeTool && slices.Contains(writeTools, p.Tool) && p.Input.FilePath != "" {
		fp := p.Input.FilePath
		if !filepath.IsAbs(fp) && p.Cwd != "" {
			fp = filepath.Join(p.Cwd, fp)
		}
		w.Session, w.Paths = p.Session, append(w.Paths, filepath.Clean(fp))
	}
	return w
}

// Deny refuses a call (adapter.Answerer): {"decision":"deny","reason":…}.
func (gemini) Deny(_ adapter.Call, reason string) []byte {
	return hookkit.Answer(map[string]string{"decision": "deny", "reason": reason})
}

// Allow is {"decision":"allow","reason":…} (adapter.Answerer).
func (gemini) Allow(_ adapter.Call, reason string) []byte {
	return hookkit.Answer(map[string]string{"decision": "allow", "reason": reason})
}

// Warn is a system message (adapter.Answerer).
func (gemini) Warn(_ adapter.Call, reason string) []byte { return hookkit.SystemMessage(reason) }

// Install is where Gemini CLI keeps its hooks and instructions
// (adapter.Installer): ~/.gemini/settings.json, read with comments, one
// named handler per event, timeouts in milliseconds; GEMINI.md.
func (gemini) Install() adapter.InstallSpec {
	return adapter.InstallSpec{
		Settings: &adapter.SettingsSpec{Dir: ".gemini", File: "settings.json", Events: Events(), Layout: adapter.LayoutGroups,
			HandlerName: "harn", Unit: time.Millisecond, DefaultTimeout: 60 * time.Second, Waits: []string{BeforeTool}, JSONC: true},
		Instructions: &adapter.InstructionsSpec{UserDir: ".gemini", File: "GEMINI.md", ProjectFile: "GEMINI.md"},
	}
}

// SessionEnv is Gemini CLI's session variable (adapter.SessionEnver).
func (gemini) SessionEnv() []string { return []string{"GEMINI_SESSION_ID"} }

// Host is how a node hosts Gemini CLI in a terminal: `gemini -i PROMPT`
// starts it interactive with a first prompt; Esc cancels the running
// request.
func (gemini) Host() adapter.HostSpec {
	return adapter.HostSpec{Binary: "gemini", PromptFlag: "-i", Interrupt: adapter.Escape, Submit: adapter.Enter,
		DropEnv: []string{"GEMINI_SESSION_ID"}}
}
