package cli

import (
	"context"
	"errors"
	"fmt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/text"
)

// Mesh trust commands: harn mesh init, harn mesh ca, and the helpers that
// talk to the local node's MeshAdmin service.

// admin is the local node's MeshAdmin service.
func (cl *client) admin() api.MeshAdminClient { return api.NewMeshAdminClient(cl.conn) }

// adminErr maps a MeshAdmin refusal: trust is ExitTrust, the rest as any
// call's.
func adminErr(err error, p place) error {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.PermissionDenied {
		return withCode(ExitTrust, errors.New(text.OneLine(st.Message())))
	}
	return rpcErr(err, p)
}

func addTokenFlags(c *cobra.Command) {
	c.Flags().Bool("server", false, "the token makes servers (raft voters holding the CA key); default: nodes. Read from this command line only, never from HARN_SERVER or the config file")
	commandLineOnly(c, "server")
	c.Flags().Duration("ttl", trust.DefaultTokenTTL, "how long the token may be redeemed")
	c.Flags().Int("uses", 0, "how many joins the token allows (0: any number within its TTL)")
	addJSONFlag(c)
}

func tokenArgs(c *cobra.Command) (wire.TokenCreateArgs, error) {
	var a wire.TokenCreateArgs
	a.Server, _ = c.Flags().GetBool("server")
	a.TTL, _ = c.Flags().GetDuration("ttl")
	a.Uses, _ = c.Flags().GetInt("uses")
	if a.TTL <= 0 || a.Uses < 0 {
		return a, usageErr(errors.New("--ttl must be positive and --uses at least 0"))
	}
	return a, nil
}

func printToken(c *cobra.Command, t wire.TokenCreated) error {
	if asJSON(c) {
		return writeJSON(c, map[string]any{"join_token": t.Token, "id": t.ID, "role": t.Role, "expires": t.Expires})
	}
	fmt.Fprintln(c.OutOrStdout(), t.Token)
	uses := "any number of joins"
	if t.Uses > 0 {
		uses = fmt.Sprintf("%d join(s)", t.Uses)
	}
	fmt.Fprintf(c.ErrOrStderr(), "join token %s for role %s: %s until %s\n", t.ID, t.Role, uses, t.Expires.Format(time.RFC3339))
	server := ""
	if t.Role == string(trust.RoleServer) {
		server = " --server"
	}
	fmt.Fprintf(c.ErrOrStderr(), "on the other node: harn node%s --join <this-host>:%d --join-token <token>\n", server, layout.DefaultGossipPort)
	return nil
}

func newMeshInitCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "init",
		Short: "on the first server, before its node starts: make the mesh CA, the gossip key and a join token",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			d := daemonOf(c)
			if d == nil || d.InitMesh == nil {
				return execDaemon(c) // the trust store is harnd's
			}
			p := placeOf(c)
			name, _ := c.Flags().GetString("name")
			a, err := tokenArgs(c)
			if err != nil {
				return err
			}
			res, err := d.InitMesh(p.DataDir, name, a)
			if err != nil {
				if ExitCode(err) == ExitUsage {
					return err
				}
				return withCode(ExitTrust, err)
			}
			if !asJSON(c) {
				what := "made the mesh CA"
				if !res.Created {
					what = "kept the mesh CA"
				}
				fmt.Fprintf(c.ErrOrStderr(), "%s %s in %s; start this server with `harn node --server`\n", what, res.Fingerprint, layout.TrustDir(p.DataDir))
			}
			return printToken(c, res.Token)
		},
	}
	c.Flags().String("name", "", "this server's node name (default: the hostname); start the node with the same --name")
	addTokenFlags(c)
	return c
}

// readJoinToken reads --join-token, or --join-token-file (which must not be
// readable by others).
func readJoinToken(c *cobra.Command) (string, error) {
	tok, _ := c.Flags().GetString("join-token")
	file, _ := c.Flags().GetString("join-token-file")
	if file == "" {
		return strings.TrimSpace(tok), nil
	}
	if tok != "" {
		return "", usageErr(errors.New("pass --join-token or --join-token-file, not both"))
	}
	if err := trust.CheckSecretFile(file); err != nil {
		return "", withCode(ExitTrust, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", usageErr(fmt.Errorf("--join-token-file: %w", err))
	}
	return strings.TrimSpace(string(b)), nil
}

func newMeshCACmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ca",
		Short: "the mesh CA: rotate (both CAs trusted until --finish), status",
		Args:  noArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "make a new mesh CA on the servers; with --finish, stop trusting the previous one",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			op := wire.AdminCARotate
			if f, _ := c.Flags().GetBool("finish"); f {
				op = wire.AdminCAFinish
			}
			return caCall(c, op)
		},
	}
	rotate.Flags().Bool("finish", false, "end the rotation: certificates of the previous CA are refused from then on")
	addJSONFlag(rotate)
	status := &cobra.Command{
		Use:   "status",
		Short: "show the trusted CAs and whether this node's certificate is from the current one",
		Args:  noArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return caCall(c, wire.AdminCAStatus) },
	}
	addJSONFlag(status)
	c.AddCommand(rotate, status)
	return c
}

func caCall(c *cobra.Command, op string) error {
	return withNode(c, func(ctx context.Context, cl *client, p place) error {
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
		if asJSON(c) {
			return writeJSON(c, st)
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
