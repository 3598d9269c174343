package runtime

import "time"

// LoopEvent is one thing that happened in a turn of harn's agent loop
// (runtime/agent.Event, which names its types). It lives here, beside
// Usage, so that a task's result can carry the loop's events to the
// client without linking the loop and its provider SDKs.
type LoopEvent struct {
	Type    string    `json:"type"`
	Task    string    `json:"task"`
	Step    int       `json:"step,omitempty"`
	Call    string    `json:"call,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	Text    string    `json:"text,omitempty"` // untrusted model text: sanitize before a terminal
	Outcome string    `json:"outcome,omitempty"`
	Status  string    `json:"status,omitempty"`
	Usage   *Usage    `json:"usage,omitempty"`
	At      time.Time `json:"at"`
}
