package cli

import (
	"context"
	"fmt"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api/wire"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/api"
)

func newKeyringCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "keyring",
		Short: "the gossip keyring, replicated through the registry: list, install, use, remove",
		Args:  hook.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "show the mesh's gossip keys and the ones this node holds",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				res, err := cl.admin().KeyringList(ctx, &api.AdminEmpty{})
				if err != nil {
					return adminErr(err, p)
				}
				v := wire.KeyringFromAPI(res)
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, v)
				}
				printKeyring(c, v)
				return nil
			})
		},
	}
	hook.AddJSONFlag(list)
	c.AddCommand(list)
	for _, op := range []struct{ name, short string }{
		{"install", "add a gossip key every node accepts (rotation step 1)"},
		{"use", "make an installed key the one every node sends with (step 2)"},
		{"remove", "forget a key that is not in use (step 3)"},
	} {
		op := op
		sub := &cobra.Command{
			Use:   op.name + " KEY",
			Short: op.short,
			Args:  exactArgs(1, "a base64 32-byte key (harn keygen)"),
			RunE: func(c *cobra.Command, args []string) error {
				return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
					res, err := cl.admin().KeyringChange(ctx, &api.KeyringChangeRequest{Op: op.name, Key: args[0]})
					if err != nil {
						return adminErr(err, p)
					}
					v := wire.KeyringFromAPI(res)
					if hook.AsJSON(c) {
						return hook.WriteJSON(c, v)
					}
					printKeyring(c, v)
					return nil
				})
			},
		}
		hook.AddJSONFlag(sub)
		c.AddCommand(sub)
	}
	return c
}

func printKeyring(c *cobra.Command, v wire.KeyringView) {
	w := c.OutOrStdout()
	for _, k := range v.Keys {
		mark := " "
		if k == v.Primary {
			mark = "*"
		}
		fmt.Fprintf(w, "%s %s\n", mark, k)
	}
	fmt.Fprintf(w, "this node: %d key(s), sending with %s\n", len(v.NodeKeys), orDash(v.NodePrimary))
}
