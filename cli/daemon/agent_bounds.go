package daemon

import "github.com/spf13/cobra"

// Defaults of the bounds of harn's own agent on a model's output: those of
// runtime/agent (the client does not link it; a test checks they match).
const (
	defaultAgentAnswerBytes  = 4 << 20
	defaultAgentToolCalls    = 64
	defaultAgentSteps        = 256
	defaultAgentPreviewBytes = 8 << 10
)

// addAgentBoundFlags adds the node's flags that bound what a model can
// make harn's own agent hold or do. Each is also HARN_AGENT_… and a
// config-file key.
func addAgentBoundFlags(c *cobra.Command) {
	f := c.Flags()
	f.Int("agent.max-answer-bytes", defaultAgentAnswerBytes, "harn's own agent: bytes of one streamed model answer (text, tool names and arguments); past it the read stops and the step ends with an error (1 to 64 MiB)")
	f.Int("agent.max-tool-calls", defaultAgentToolCalls, "harn's own agent: tool calls of one model answer (one step); one more ends the step with an error, before any call runs (1 to 4096)")
	f.Int("agent.max-steps", defaultAgentSteps, "harn's own agent: model calls of one task; the task ends with an error instead of one more (1 to 100000)")
	f.Int("agent.tool-preview-bytes", defaultAgentPreviewBytes, "harn's own agent: bytes of one tool result the model sees in its context (head and tail around a reference recall takes; the whole output is stored) (256 to 1 MiB)")
}
