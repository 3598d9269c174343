package cli

import (
	"fmt"
	"maps"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/trust"
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

// launcherConfig reads the launchers (the config file's [launchers], then
// --launcher, which replaces a definition of the same name) and
// --remote-exec into cfg.
func launcherConfig(c *cobra.Command, cfg *node.Config) error {
	file, err := loadConfigFile(c)
	if err != nil {
		return usageErr(err) // applySettings reported it first
	}
	l := tasks.Launchers{}
	maps.Copy(l, file.launchers)
	defs, _ := c.Flags().GetStringArray("launcher")
	for _, d := range defs {
		name, argv, err := tasks.ParseLauncherFlag(d)
		if err != nil {
			return usageErr(err)
		}
		l[name] = argv
	}
	if err := l.Check(); err != nil {
		return usageErr(err)
	}
	rx, _ := c.Flags().GetString("remote-exec")
	names, err := tasks.ParseRemoteExec(rx, l)
	if err != nil {
		return usageErr(err)
	}
	if rc, _ := trust.ParseRemoteControl(cfg.Cluster.RemoteControl); len(names) > 0 && rc.Off() {
		cfg.Logger.Warn(fmt.Sprintf("--remote-exec %v has no effect while --remote-control is off", names))
	}
	cfg.Launchers, cfg.Cluster.RemoteExec = l, names
	return nil
}
