package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/util/text"
)

func newKeygenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "print a fresh gossip key (base64, 32 bytes) for --gossip-key",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			k, err := layout.GenerateGossipKey()
			if err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout(), k)
			return nil
		},
	}
}

func newMeshCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "mesh",
		Short: "the mesh: members, registry (raft) state, leave, remove",
		Args:  hook.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	members := &cobra.Command{
		Use:   "members",
		Short: "list the mesh's members: name, addr, status, role",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				res, err := cl.api.Members(ctx, &api.MeshRequest{})
				if err != nil {
					return hook.RpcErr(err, p)
				}
				ms := make([]wire.MemberView, 0, len(res.Members))
				for _, m := range res.Members {
					ms = append(ms, wire.MemberFromAPI(m))
				}
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, ms)
				}
				tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tADDR\tSTATUS\tROLE\tSINCE")
				for _, m := range ms {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", text.OneLine(m.Name), text.OneLine(m.Addr), text.OneLine(m.Status), text.OneLine(m.Role), text.OneLine(orDash(m.Since)))
				}
				return tw.Flush()
			})
		},
	}
	hook.AddJSONFlag(members)
	raft := &cobra.Command{
		Use:   "raft",
		Short: "show the registry's raft state: leader, term, commit index, servers",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				res, err := cl.api.Raft(ctx, &api.MeshRequest{})
				if err != nil {
					return hook.RpcErr(err, p)
				}
				v := wire.RaftFromAPI(res.Stats)
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, v)
				}
				fmt.Fprintf(c.OutOrStdout(), "leader %s, term %d, commit index %d (%s here)\n", text.OneLine(orDash(v.Leader)), v.Term, v.CommitIndex, text.OneLine(v.State))
				for _, s := range v.Servers {
					role := "non-voter"
					if s.Voter {
						role = "voter"
					}
					stale := ""
					if s.Stale {
						stale = fmt.Sprintf("  STALE: advertises %s; peers dial the old address (it moves when the server reaches the leader; see harn doctor)", text.OneLine(s.Advertises))
					}
					fmt.Fprintf(c.OutOrStdout(), "  %s %s %s%s\n", text.OneLine(s.ID), text.OneLine(s.Addr), role, stale)
				}
				return nil
			})
		},
	}
	hook.AddJSONFlag(raft)
	leave := &cobra.Command{
		Use:   "leave",
		Short: "leave the mesh gracefully (others see this node as left, not dead)",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				if _, err := cl.api.Leave(ctx, &api.MeshRequest{}); err != nil {
					return hook.RpcErr(err, p)
				}
				fmt.Fprintln(c.OutOrStdout(), "left the mesh; stop the node when you are done with it")
				return nil
			})
		},
	}
	remove := &cobra.Command{
		Use:   "remove NODE",
		Short: "remove a node: revoke its certificates and take it out of the registry's raft configuration",
		Args:  exactArgs(1, "the node name to remove"),
		RunE: func(c *cobra.Command, args []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				var rv wire.Revoked
				res, err := cl.admin().RevokeNode(ctx, &api.RevokeNodeRequest{Node: args[0]})
				if err = adminErr(err, p); err == nil {
					rv = wire.RevokedFromAPI(res)
				}
				if err != nil && hook.ExitCode(err) != hook.ExitTrust {
					return err
				}
				if err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "certificates not revoked: %v\n", err)
				} else if len(rv.Serials) > 0 {
					fmt.Fprintf(c.OutOrStdout(), "revoked %d certificate(s) of %s\n", len(rv.Serials), args[0])
				}
				if _, err := cl.api.RemoveServer(ctx, &api.RemoveServerRequest{Id: args[0]}); err != nil {
					return hook.RpcErr(err, p)
				}
				fmt.Fprintf(c.OutOrStdout(), "removed %s from the registry\n", args[0])
				return nil
			})
		},
	}
	c.AddCommand(members, raft, leave, remove, daemon.NewMeshInitCmd(), newMeshCACmd())
	return c
}
