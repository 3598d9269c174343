package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/util/text"
)

func addMeshFlags(c *cobra.Command) {
	f := c.Flags()
	addRegistryAuthFlags(f)
	f.String("bind", "", "address the gossip, raft and rpc listeners bind (default 127.0.0.1 alone, 0.0.0.0 in a mesh)")
	f.String("advertise", "", "address other nodes use to reach this one (default: the bind address, or the first private address)")
	f.Int("gossip-port", layout.DefaultGossipPort, "gossip (memberlist) port, UDP and TCP; 0 picks a free one")
	f.Int("raft-port", layout.DefaultRaftPort, "registry (raft) port; 0 picks a free one")
	f.Int("rpc-port", layout.DefaultRPCPort, "cluster gRPC port; 0 picks a free one")
	f.String("http-port", "127.0.0.1:7713", "web board and /metrics, always behind a token (harn web open): a port (on 127.0.0.1) or host:port; 0 serves none")
	f.StringSlice("join", nil, "gossip address of a node to join, host:port (repeatable)")
	f.Bool("server", false, "be a registry server: a raft voter holding the registry's log (3 or 5 per mesh); every other node follows the registry from a server")
	f.Bool("replica", false, "be a read replica: a non-voting raft member holding the registry's log (a far site); never with --server")
	f.Int("bootstrap-expect", 0, "form the registry when this many servers have met (with --server)")
	f.String("gossip-key", "", "base64 32-byte `key` encrypting gossip (make one with: harn keygen)")
	f.String("mesh-profile", "lan", "gossip timers: lan, or local (fast; tests)")
	f.String("raft-profile", "lan", "registry timers: lan (1 s), or fast (tests)")
	f.Bool("no-mesh", false, "run without the mesh: no network listener, local sessions only")
	f.String("join-token", "", "join token (harn token create), used at the first start only")
	f.String("join-token-file", "", "file holding the join token (mode 0600; keeps it out of ps)")
	f.StringSlice("join-rpc", nil, "cluster gRPC address of a server to join through (default: each --join seed's port plus 2)")
	f.Bool("insecure-mesh", false, "run raft and the cluster gRPC in plaintext, on loopback too (trusted networks only; default: mutual TLS, with a CA made at the first start)")
	f.String("remote-control", "off", "who on other nodes may start, steer, cancel, approve or confirm this node's agents: off, or NODE,... and servers (callers holding a server-role certificate)")
	f.String("remote-exec", "none", "the launchers (--launcher) that callers --remote-control allows may start here: none, or NAME,...")
	f.Int("max-peer-reply-mib", layout.DefaultMaxPeerReply>>20, "largest message, in MiB, taken from a peer on the cluster gRPC (a reply to this node's call, or a request to its rpc port); larger ones are refused")
}

func newKeygenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "print a fresh gossip key (base64, 32 bytes) for --gossip-key",
		Args:  noArgs,
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
		Args:  noArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	members := &cobra.Command{
		Use:   "members",
		Short: "list the mesh's members: name, addr, status, role",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				res, err := cl.api.Members(ctx, &api.MeshRequest{})
				if err != nil {
					return rpcErr(err, p)
				}
				ms := make([]wire.MemberView, 0, len(res.Members))
				for _, m := range res.Members {
					ms = append(ms, wire.MemberFromAPI(m))
				}
				if asJSON(c) {
					return writeJSON(c, ms)
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
	addJSONFlag(members)
	raft := &cobra.Command{
		Use:   "raft",
		Short: "show the registry's raft state: leader, term, commit index, servers",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				res, err := cl.api.Raft(ctx, &api.MeshRequest{})
				if err != nil {
					return rpcErr(err, p)
				}
				v := wire.RaftFromAPI(res.Stats)
				if asJSON(c) {
					return writeJSON(c, v)
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
	addJSONFlag(raft)
	leave := &cobra.Command{
		Use:   "leave",
		Short: "leave the mesh gracefully (others see this node as left, not dead)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				if _, err := cl.api.Leave(ctx, &api.MeshRequest{}); err != nil {
					return rpcErr(err, p)
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
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				var rv wire.Revoked
				res, err := cl.admin().RevokeNode(ctx, &api.RevokeNodeRequest{Node: args[0]})
				if err = adminErr(err, p); err == nil {
					rv = wire.RevokedFromAPI(res)
				}
				if err != nil && ExitCode(err) != ExitTrust {
					return err
				}
				if err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "certificates not revoked: %v\n", err)
				} else if len(rv.Serials) > 0 {
					fmt.Fprintf(c.OutOrStdout(), "revoked %d certificate(s) of %s\n", len(rv.Serials), args[0])
				}
				if _, err := cl.api.RemoveServer(ctx, &api.RemoveServerRequest{Id: args[0]}); err != nil {
					return rpcErr(err, p)
				}
				fmt.Fprintf(c.OutOrStdout(), "removed %s from the registry\n", args[0])
				return nil
			})
		},
	}
	c.AddCommand(members, raft, leave, remove, newMeshInitCmd(), newMeshCACmd())
	return c
}
