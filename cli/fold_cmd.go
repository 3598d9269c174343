package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/presence"
)

func newFoldCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "fold [FILE|-]",
		Short: "fold canonical events (JSONL) into session state; needs no node",
		Long: `The public foldSessionState: reads canonical events, one JSON object per
line, from FILE or stdin, and prints the folded state of the session (or of
each session) with the seed's fields. It uses the same reducer as the node.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return hook.UsageErr(errors.New("fold takes at most one FILE (or - for stdin)"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			var r io.Reader = c.InOrStdin()
			name := "stdin"
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return hook.UsageErr(fmt.Errorf("open %s: %v", args[0], err))
				}
				defer f.Close()
				r, name = f, args[0]
			}
			evs, err := presence.DecodeJSONL(r)
			if err != nil {
				return hook.UsageErr(fmt.Errorf("%s: %w", name, err))
			}
			states := presence.FoldSessions(evs)
			want, _ := c.Flags().GetString("session")
			full, _ := c.Flags().GetBool("full")
			view := func(s presence.State) any {
				if full {
					return s
				}
				return statusView(s)
			}
			if want != "" {
				s, ok := states[want]
				if !ok {
					return hook.WithCode(hook.ExitNotFound, fmt.Errorf("session %q has no events in %s", want, name))
				}
				return hook.WriteJSON(c, view(s))
			}
			if len(states) == 1 {
				for _, s := range states {
					return hook.WriteJSON(c, view(s))
				}
			}
			ids := make([]string, 0, len(states))
			for id := range states {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			out := make([]any, 0, len(ids))
			for _, id := range ids {
				out = append(out, view(states[id]))
			}
			return hook.WriteJSON(c, out)
		},
	}
	c.Flags().String("session", "", "fold only this session's events")
	c.Flags().Bool("full", false, "print the whole folded state, not just the two axes")
	// fold always prints JSON; --json is accepted like on every read command.
	hook.AddJSONFlag(c)
	return c
}
