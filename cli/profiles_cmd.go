package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/tasks/taskwire"

	"github.com/spf13/cobra"
)

// `harn profiles`: the named grant profiles, what each lets harn's own
// tools do, computed from their grants (runtime.Profiles), so that the
// table never drifts from what a task is checked against. The docs'
// tables (README, docs/agent.md) are held to it by a test.

func newProfilesCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "profiles",
		Short: "the grant profiles (--profile NAME): what each lets harn's tools do, and every grant with --json",
		Long: `profiles lists the named grant profiles that --profile takes (harn ask, harn chat,
harn task start, follow-up, supersede), with what each lets harn's own tools do:
runs (without asking), asks (each call waits for a confirmation: harn task
confirm, the TUI's y, the board) or no (refused). The same names govern another
agent's own tools under harn task start --session. --json lists every grant of
each profile.`,
		Args: hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ps := taskwire.Profiles()
			if hook.AsJSON(c) {
				return hook.WriteJSON(c, ps)
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, strings.Join(profileHeader(), "\t"))
			for _, p := range ps {
				fmt.Fprintln(tw, strings.Join(profileRow(p), "\t"))
			}
			return tw.Flush()
		},
	}
	hook.AddJSONFlag(c)
	return c
}

// profileHeader is the table's header: the docs' tables have the same.
func profileHeader() []string {
	h := []string{"PROFILE"}
	for _, l := range taskwire.ProfileToolLabels() {
		h = append(h, strings.ToUpper(l))
	}
	return append(h, "FOR")
}

// profileRow is one profile's row (the default marked).
func profileRow(p taskwire.ProfileInfo) []string {
	name := p.Name
	if p.Default {
		name += " (default)"
	}
	return append(append([]string{name}, p.Tools...), p.Summary)
}
