package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/harn-dev/harn/node/api/wire"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
)

func newTokenCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "token",
		Short: "join tokens: create, list, revoke (on a mesh server)",
		Args:  hook.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	create := daemon.NewTokenCreateCmd(func(c *cobra.Command, a wire.TokenCreateArgs) error {
		return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
			res, err := cl.admin().TokenCreate(ctx, &api.TokenCreateRequest{Server: a.Server, TtlMs: a.TTL.Milliseconds(), Uses: int32(a.Uses)})
			if err != nil {
				return adminErr(err, p)
			}
			return daemon.PrintToken(c, wire.TokenCreatedFromAPI(res), "", "")
		})
	})
	list := &cobra.Command{
		Use:   "list",
		Short: "list the join tokens in the registry (never their secrets)",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				res, err := cl.admin().TokenList(ctx, &api.AdminEmpty{})
				if err != nil {
					return adminErr(err, p)
				}
				recs := wire.TokenRecordsFromAPI(res.Tokens)
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, recs)
				}
				tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tROLE\tUSED\tUSES\tEXPIRES")
				for _, r := range recs {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", r.ID, r.Role, r.Used, r.Uses, r.Expires.Format(time.RFC3339))
				}
				return tw.Flush()
			})
		},
	}
	hook.AddJSONFlag(list)
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "delete a join token",
		Args:  exactArgs(1, "the token id (harn token list)"),
		RunE: func(c *cobra.Command, args []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				if _, err := cl.admin().TokenRevoke(ctx, &api.TokenRevokeRequest{Id: args[0]}); err != nil {
					return adminErr(err, p)
				}
				fmt.Fprintf(c.OutOrStdout(), "revoked token %s\n", args[0])
				return nil
			})
		},
	}
	c.AddCommand(create, list, revoke)
	return c
}
