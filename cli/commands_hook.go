//go:build harn_hook

package cli

import "github.com/spf13/cobra"

// The command tree of harn-hook: the agents' hook alone (`harn-hook hook
// AGENT`, the command line `harn hook install` writes when harn-hook is
// beside harn), built with the harn_hook tag so that the process every
// tool call of every agent starts links neither the TUI nor the rest of
// the command line. harn has every command, the hook's included.

func commandSet() []func() *cobra.Command { return []func() *cobra.Command{newHookCmd} }

var soleRoots = map[string]func() *cobra.Command{"hook": newHookCmd}

// hookSubcommands: install, uninstall and git are harn's.
func hookSubcommands() []*cobra.Command { return nil }

func bareRoot(c *cobra.Command) error { return c.Help() }

// applyExamples: the examples are harn's help.
func applyExamples(*cobra.Command) {}
