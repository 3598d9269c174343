package cli

import (
	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
)

// The command tree of harn. (harn-hook links cli/hook alone, whose tree
// holds the hook alone.)

func init() {
	hook.SetCommands(hook.Commands{Set: commandSet, SoleRoots: soleRoots, HookSubcommands: hookSubcommands,
		BareRoot: bareRoot, ApplyExamples: applyExamples})
}

// commandSet is the constructors of the top-level commands other than
// version, wired here (no init registration), in the order the files
// held them.
func commandSet() []func() *cobra.Command {
	return []func() *cobra.Command{
		newAgentsCmd, newAskCmd, newAttachCmd, newChatCmd, newContextCmd, newProfilesCmd, newDesktopAppCmd, newDoctorCmd, hook.NewHookCmd, newKeyringCmd,
		newCapabilityCmd, newProviderCmd, newMeshCmd, newKeygenCmd, newNodeCmd,
		newNotifyCmd, newTaskCmd, newTokenCmd, newDirTrustCmd, newUsageCmd, newWebCmd, newRunCmd, newWorktreesCmd,
	}
}

// soleRoots are the commands that run under a root holding them alone:
// the hook runs on every tool call of every agent, `agents` is what
// people and scripts run most, and `ask` is a one-shot whose start is
// part of its answer's time; none builds the rest of the command tree.
// (Help, typo suggestions and examples are the same.)
var soleRoots = map[string]func() *cobra.Command{"hook": hook.NewHookCmd, "agents": newAgentsCmd, "ask": newAskCmd}

// hookSubcommands are `harn hook`'s: install, uninstall and git.
func hookSubcommands() []*cobra.Command {
	return []*cobra.Command{newHookInstallCmd(), newHookUninstallCmd(), newHookGitCmd()}
}

// bareRoot is what harn alone runs: on a terminal, the TUI of harn's own
// agent (harn chat); elsewhere the help.
func bareRoot(c *cobra.Command) error {
	if isTerminal(c.OutOrStdout()) && isTerminalIn(c.InOrStdin()) {
		return runChat(c, "", false)
	}
	return c.Help()
}
