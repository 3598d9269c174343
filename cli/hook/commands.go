package hook

import "github.com/spf13/cobra"

// Commands is the command tree a binary runs. harn-hook's is the agents'
// hook alone (`harn-hook hook AGENT`, the command line `harn hook install`
// writes when harn-hook is beside harn), so that the process every tool
// call of every agent starts links neither the TUI nor the rest of the
// command line; harn (package cli) sets its whole tree with SetCommands in
// its init, the hook's included.
type Commands struct {
	// Set is the constructors of the top-level commands other than
	// version.
	Set func() []func() *cobra.Command
	// SoleRoots are the commands that run under a root holding them
	// alone, by name.
	SoleRoots map[string]func() *cobra.Command
	// HookSubcommands are `hook`'s subcommands.
	HookSubcommands func() []*cobra.Command
	// BareRoot runs the root given no command.
	BareRoot func(c *cobra.Command) error
	// ApplyExamples sets the examples of every command in the tree.
	ApplyExamples func(*cobra.Command)
}

// commands is harn-hook's tree until SetCommands.
var commands Commands

func init() { commands = hookOnly() }

func hookOnly() Commands {
	return Commands{
		Set:             func() []func() *cobra.Command { return []func() *cobra.Command{NewHookCmd} },
		SoleRoots:       map[string]func() *cobra.Command{"hook": NewHookCmd},
		HookSubcommands: func() []*cobra.Command { return nil }, // install, uninstall and git are harn's
		BareRoot:        func(c *cobra.Command) error { return c.Help() },
		ApplyExamples:   func(*cobra.Command) {}, // the examples are harn's help
	}
}

// SetCommands makes c the command tree of every Main; call it from an
// init, before any Main runs.
func SetCommands(c Commands) { commands = c }
