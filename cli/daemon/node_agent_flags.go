package daemon

import (
	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
)

// addNodeAgentFlags adds the flags of what harn's own agent runs with on
// this node, and what a caller on another node may choose for a task
// here, to the node command.
func addNodeAgentFlags(c *cobra.Command) {
	f := c.Flags()
	f.String("provider", "openai", "this node's model API for harn sessions: openai (chat completions) or anthropic (Messages)")
	f.String("provider-url", "", "this node's model API base URL (default: the vendor's); its key (HARN_PROVIDER_KEY or --provider-key-file) goes to this URL only")
	f.String("provider-key-file", "", "file holding this node's provider key (yours, mode 0600, not a symlink; keeps it out of the environment)")
	f.StringSlice("provider-models", nil, "the models a harn session started from another node may name (the first is its default; default: any)")
	f.StringArray("workspace", nil, "a directory a task from another node may work in (repeatable; also [workspaces] in the config file; default: none, so another node starts no session here)")
	f.String("remote-profiles", "read-only", "the grant profiles a task from another node may hold here: read-only, confirm, edit, full (NAME,...), or none")
}

// ConfigWorkspaces are the config file's [workspaces].
func ConfigWorkspaces(c *cobra.Command) ([]string, error) {
	file, err := hook.LoadConfigFile(c)
	if err != nil {
		return nil, err
	}
	return file.Workspaces, nil
}

// ConfigPath is the config file the command reads ("" for none).
func ConfigPath(c *cobra.Command) string {
	p, _, _ := hook.ConfigPath(c)
	return p
}
