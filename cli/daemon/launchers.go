package daemon

import (
	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
)

// addLauncherFlags adds --launcher (repeatable) to the node command.
func addLauncherFlags(c *cobra.Command) {
	c.Flags().StringArray("launcher", nil, "define a launcher: NAME=ARGV, a name for a fixed agent command (split into words as a shell does, no shell; repeatable; also [launchers] in the config file)")
	_ = c.Flags().SetAnnotation("launcher", hook.AnnWhole, []string{"true"})
}
