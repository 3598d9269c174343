package cli

import (
	"testing"

	"github.com/harn-dev/harn/runtime/agent"
)

// TestAgentBoundFlagsDefaultToTheLoopsDefaults: the node's flags show
// runtime/agent's defaults (the client does not link it).
func TestAgentBoundFlagsDefaultToTheLoopsDefaults(t *testing.T) {
	d := agent.DefaultBounds()
	c := newNodeCmd()
	for flag, want := range map[string]int{agent.FlagAnswerBytes: d.AnswerBytes, agent.FlagToolCalls: d.ToolCalls,
		agent.FlagSteps: d.Steps, agent.FlagToolPreviewBytes: d.ToolPreviewBytes} {
		got, err := c.Flags().GetInt(flag)
		if err != nil || got != want {
			t.Errorf("--%s defaults to %d (%v); runtime/agent's default is %d", flag, got, err, want)
		}
	}
}
