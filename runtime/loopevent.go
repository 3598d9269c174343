package runtime

import (
	"time"
	"unicode/utf8"
)

// LoopEvent is one thing that happened in a turn of harn's agent loop
// (runtime/agent.Event, which names its types). It lives here, beside
// Usage, so that a task's result can carry the loop's events to the
// client without linking the loop and its provider SDKs.
type LoopEvent struct {
	Type    string `json:"type"`
	Task    string `json:"task"`
	Step    int    `json:"step,omitempty"`
	Call    string `json:"call,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Text    string `json:"text,omitempty"` // untrusted model text: sanitize before a terminal
	Outcome string `json:"outcome,omitempty"`
	Status  string `json:"status,omitempty"`
	// Args (a call's input.requested and tool.pre): the model's
	// arguments as sent (JSON), Diff: what a write or edit would change
	// (a unified diff), Output (tool.post): the head of what the call
	// answered. All three are untrusted, and bounded by Bounded.
	Args   string    `json:"args,omitempty"`
	Diff   string    `json:"diff,omitempty"`
	Output string    `json:"output,omitempty"`
	Usage  *Usage    `json:"usage,omitempty"`
	At     time.Time `json:"at"`
}

// Bounds of a LoopEvent's previews (Bounded).
const (
	MaxEventArgs   = 4 << 10
	MaxEventDiff   = 8 << 10
	MaxEventOutput = 8 << 10
)

// Bounded is e with its previews cut to their bounds at a rune boundary.
func (e LoopEvent) Bounded() LoopEvent {
	e.Args = clipUTF8(e.Args, MaxEventArgs)
	e.Diff = clipUTF8(e.Diff, MaxEventDiff)
	e.Output = clipUTF8(e.Output, MaxEventOutput)
	return e
}

func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
