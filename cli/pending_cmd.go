package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/util/text"
)

// addPendingCmds adds `pending`, `approve` and `deny` under `agents`.
func addPendingCmds(agents *cobra.Command) {
	agents.AddCommand(newPendingCmd(), newAnswerCmd(true), newAnswerCmd(false))
}

func newPendingCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "pending",
		Short: "list the agents' open permission requests across the mesh (hooks installed with --remote-approve)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				res, err := cl.api.Pending(ctx, &api.PendingRequest{})
				if err != nil {
					return rpcErr(err, p)
				}
				reqs := make([]tasks.Request, 0, len(res.Requests))
				for _, r := range res.Requests {
					reqs = append(reqs, tasks.RequestFromAPI(r))
				}
				sort.Slice(reqs, func(i, j int) bool { return reqs[i].Opened.Before(reqs[j].Opened) })
				for _, n := range res.Unreachable {
					fmt.Fprintf(c.ErrOrStderr(), "harn: node %s did not answer; its requests are not listed\n", text.Sanitize(n))
				}
				if asJSON(c) {
					return writeJSON(c, reqs)
				}
				if len(reqs) == 0 {
					fmt.Fprintln(c.OutOrStdout(), "no open permission requests")
					return nil
				}
				now := time.Now()
				tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "REQUEST\tSESSION\tNODE\tAGENT\tTOOL\tSUMMARY\tAGE")
				for _, r := range reqs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", text.Cell(r.ID), text.Cell(text.Clip(r.Session, 14)),
						text.Cell(r.Node), text.Cell(r.Agent), text.Cell(r.Tool), text.Cell(r.Summary), text.Age(now, r.Opened))
				}
				return tw.Flush()
			})
		},
	}
	addJSONFlag(c)
	return c
}

func newAnswerCmd(allow bool) *cobra.Command {
	use, short := "deny REQUEST", "deny an open permission request, from any node"
	if allow {
		use, short = "approve REQUEST", "approve an open permission request, from any node"
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(1, "a request id from `harn agents pending`"),
		RunE: func(c *cobra.Command, args []string) error {
			reason, _ := c.Flags().GetString("reason")
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				res, err := cl.api.Answer(ctx, &api.AnswerRequest{Request: args[0], Allow: allow, Reason: reason})
				if err != nil {
					return taskErr(err, p)
				}
				if res.Request == nil {
					return errors.New("agents: the node's answer names no request")
				}
				r := tasks.RequestFromAPI(res.Request)
				if asJSON(c) {
					return writeJSON(c, r)
				}
				verb := "denied"
				if allow {
					verb = "approved"
				}
				fmt.Fprintf(c.OutOrStdout(), "%s %s (%s on %s, session %s)\n", verb, text.Sanitize(r.ID),
					text.OneLine(r.Tool), text.Sanitize(r.Node), text.Sanitize(r.Session))
				return nil
			})
		},
	}
	c.Flags().String("reason", "", "why (the agent shows it with a denial)")
	addJSONFlag(c)
	return c
}
