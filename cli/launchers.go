package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// annWhole marks a repeatable flag whose environment variable holds one
// whole value, not a comma-separated list (a launcher's argv may hold a
// comma).
const annWhole = "harn-whole-value"

// addLauncherFlags adds --launcher (repeatable) to the node command.
func addLauncherFlags(c *cobra.Command) {
	c.Flags().StringArray("launcher", nil, "define a launcher: NAME=ARGV, a name for a fixed agent command (split into words as a shell does, no shell; repeatable; also [launchers] in the config file)")
	_ = c.Flags().SetAnnotation("launcher", annWhole, []string{"true"})
}

// wholeValue reports whether f's environment variable is one whole value.
func wholeValue(f *pflag.Flag) bool { return len(f.Annotations[annWhole]) > 0 }
