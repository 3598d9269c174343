package runtime

import (
	"fmt"
	"unicode/utf8"
)

// Usage is what one model call of harn's agent loop cost, in tokens: the
// loop's own estimate of the input before the call and what the provider
// reported after it (both are kept, so that the estimate can be judged).
type Usage struct {
	Provider   string `json:"provider,omitempty"` // openai or anthropic
	Node       string `json:"node,omitempty"`
	Agent      string `json:"agent,omitempty"`
	Estimated  int    `json:"estimated_input"`
	Input      int    `json:"input"`
	Output     int    `json:"output"`
	CacheRead  int    `json:"cache_read,omitempty"`
	CacheWrite int    `json:"cache_write,omitempty"`
	Retries    int    `json:"retries,omitempty"`
	Error      string `json:"error,omitempty"` // the call failed: its error class
	// Reason says in words why the call failed or was not made (a bound
	// the model went over); it is the record's Reason, not part of usage.
	Reason string `json:"-"`
}

// ModelCall records one model call of a task (model names the model) with
// its usage and the keyed digests of its request (input) and its answer
// (output); either may be nil. It is refused once the task is terminal.
func (rt *Runtime) ModelCall(taskID, model string, u Usage, input, output []byte) error {
	if len(model) > maxNameBytes || len(u.Error) > MaxReasonBytes || len(u.Provider) > maxNameBytes ||
		len(u.Node) > maxNameBytes || len(u.Agent) > maxNameBytes {
		return fmt.Errorf("%w: model call names over %d bytes", ErrTooLarge, maxNameBytes)
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return err
	}
	defer t.s.mu.Unlock()
	if t.state == StateTerminal {
		return fmt.Errorf("%w: %s", ErrTaskTerminal, t.id)
	}
	reason := clipBytes(u.Reason, MaxReasonBytes)
	u.Reason = ""
	return rt.rec(t, Record{Kind: RecModel, Capability: model, Usage: &u, Reason: reason, Input: rt.dig.Digest(input), Output: rt.dig.Digest(output)})
}

// ModelCall records a model call of the task (see Runtime.ModelCall).
func (r *Run) ModelCall(model string, u Usage, input, output []byte) error {
	return r.rt.ModelCall(r.Task, model, u, input, output)
}

// clipBytes cuts s to at most n bytes, at a rune boundary.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
