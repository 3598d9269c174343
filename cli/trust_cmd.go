package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/hookwire"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/util/text"
)

// Mesh trust commands: harn mesh init, harn mesh ca, and the helpers that
// talk to the local node's MeshAdmin service.

// admin is the local node's MeshAdmin service.
func (cl *client) admin() *api.AdminClient { return cl.api.Admin }

// adminErr maps a MeshAdmin refusal: trust is ExitTrust, the rest as any
// call's.
func adminErr(err error, p hook.Place) error {
	if err == nil {
		return nil
	}
	var se *api.StatusError
	if errors.As(err, &se) && hookwire.CodeOf(se) == hookwire.PermissionDenied {
		return hook.WithCode(hook.ExitTrust, errors.New(text.OneLine(se.Message())))
	}
	return hook.RpcErr(err, p)
}

func newMeshCACmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ca",
		Short: "the mesh CA: rotate (both CAs trusted until --finish), status",
		Args:  hook.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "make a new mesh CA on the servers; with --finish, stop trusting the previous one",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			op := wire.AdminCARotate
			if f, _ := c.Flags().GetBool("finish"); f {
				op = wire.AdminCAFinish
			}
			return caCall(c, op)
		},
	}
	rotate.Flags().Bool("finish", false, "end the rotation: certificates of the previous CA are refused from then on")
	hook.AddJSONFlag(rotate)
	status := &cobra.Command{
		Use:   "status",
		Short: "show the trusted CAs and whether this node's certificate is from the current one",
		Args:  hook.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return caCall(c, wire.AdminCAStatus) },
	}
	hook.AddJSONFlag(status)
	c.AddCommand(rotate, status)
	return c
}

func caCall(c *cobra.Command, op string) error {
	return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
		call := cl.admin().CAStatus
		switch op {
		case wire.AdminCARotate:
			call = cl.admin().CARotate
		case wire.AdminCAFinish:
			call = cl.admin().CAFinish
		}
		res, err := call(ctx, &api.AdminEmpty{})
		if err != nil {
			return adminErr(err, p)
		}
		st := wire.CAStatusFromAPI(res)
		if hook.AsJSON(c) {
			return hook.WriteJSON(c, st)
		}
		for i, fp := range st.Roots {
			mark := "current "
			if i > 0 {
				mark = "previous"
			}
			fmt.Fprintf(c.OutOrStdout(), "%s %s\n", mark, fp)
		}
		fmt.Fprintf(c.OutOrStdout(), "this node's certificate is from the current CA: %v\n", st.OnCurrent)
		return nil
	})
}
