package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node"
)

// agentBoundsConfig reads the bounds of harn's own agent on a model's
// output; node.Validate checks their upper ends.
func agentBoundsConfig(c *cobra.Command, cfg *node.Config) error {
	f := c.Flags()
	for _, b := range []struct {
		flag string
		to   *int
	}{{"agent.max-answer-bytes", &cfg.AgentBounds.AnswerBytes}, {"agent.max-tool-calls", &cfg.AgentBounds.ToolCalls},
		{"agent.max-steps", &cfg.AgentBounds.Steps}, {"agent.tool-preview-bytes", &cfg.AgentBounds.ToolPreviewBytes}} {
		v, err := f.GetInt(b.flag)
		if err != nil {
			return hook.UsageErr(err)
		}
		if v < 1 {
			return hook.UsageErr(fmt.Errorf("--%s %d: a bound is at least 1; leave it out for the default", b.flag, v))
		}
		*b.to = v
	}
	cfg.ToolGuard = toolGuard()
	return nil
}

// toolGuard is the binary each tool's process group runs under as its
// guard: harn-hook beside harnd (it starts near a hello-world binary's
// time), else harnd itself.
func toolGuard() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	hook := filepath.Join(filepath.Dir(self), "harn-hook")
	if st, err := os.Stat(hook); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
		return hook
	}
	return self
}
