package agent

import (
	"fmt"
	"strings"

	"github.com/harn-dev/harn/runtime"
)

// Model is one model's token budget.
type Model struct {
	Name      string `json:"name"`
	Window    int    `json:"context_window"` // tokens in and out
	MaxOutput int    `json:"max_output"`     // tokens the answer may take
}

// SafetyMargin is kept free below the window besides the output: the
// estimate's error and the request's framing.
const SafetyMargin = 1024

// known are defaults for common models, matched by prefix (longest first).
var known = []Model{
	{Name: "claude-opus-4", Window: 200_000, MaxOutput: 32_000},
	{Name: "claude-sonnet-4", Window: 200_000, MaxOutput: 64_000},
	{Name: "claude-haiku-4", Window: 200_000, MaxOutput: 64_000},
	{Name: "claude-3-7-sonnet", Window: 200_000, MaxOutput: 64_000},
	{Name: "claude-3-5", Window: 200_000, MaxOutput: 8_192},
	{Name: "claude", Window: 200_000, MaxOutput: 8_192},
	{Name: "gpt-4.1", Window: 1_047_576, MaxOutput: 32_768},
	{Name: "gpt-4o-mini", Window: 128_000, MaxOutput: 16_384},
	{Name: "gpt-4o", Window: 128_000, MaxOutput: 16_384},
	{Name: "gpt-5", Window: 400_000, MaxOutput: 128_000},
	{Name: "o3", Window: 200_000, MaxOutput: 100_000},
	{Name: "o4-mini", Window: 200_000, MaxOutput: 100_000},
	{Name: "llama-3", Window: 128_000, MaxOutput: 4_096},
	{Name: "qwen", Window: 32_768, MaxOutput: 8_192},
	{Name: "mistral", Window: 32_768, MaxOutput: 4_096},
}

// Fallback is the budget of a model harn does not know and the config
// does not describe.
var Fallback = Model{Window: 32_768, MaxOutput: 4_096}

// ModelFor returns the model's budget: window and maxOutput when given
// (> 0), else the known default for its name, else Fallback.
func ModelFor(name string, window, maxOutput int) (Model, error) {
	m := Fallback
	best := -1
	lower := strings.ToLower(name)
	if i := strings.LastIndexByte(lower, '/'); i >= 0 { // openrouter's vendor/model
		lower = lower[i+1:]
	}
	for _, k := range known {
		if strings.HasPrefix(lower, k.Name) && len(k.Name) > best {
			m, best = k, len(k.Name)
		}
	}
	m.Name = name
	if window > 0 {
		m.Window = window
	}
	if maxOutput > 0 {
		m.MaxOutput = maxOutput
	}
	if m.Window <= 0 || m.MaxOutput <= 0 || m.UsableInput() <= 0 {
		return m, fmt.Errorf("%w: model %q: context window %d leaves no input after max output %d and a margin of %d; raise --context-window or lower --max-output",
			ErrBadConfig, name, m.Window, m.MaxOutput, SafetyMargin)
	}
	return m, nil
}

// UsableInput is the input budget: window − max output − safety margin.
func (m Model) UsableInput() int { return m.Window - m.MaxOutput - SafetyMargin }

// Budget is the runtime's admission budget for the model, with base the
// tokens of the minimal base (system prompt and core tools).
func (m Model) Budget(base int) runtime.Budget {
	return runtime.Budget{UsableInput: m.UsableInput(), Base: base}
}
