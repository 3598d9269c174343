package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/hookwire"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/util/secretfile"
	"github.com/harn-dev/harn/util/text"
)

// Mesh trust commands: harn mesh init, harn mesh ca, and the helpers that
// talk to the local node's MeshAdmin service.

// admin is the local node's MeshAdmin service.
func (cl *client) admin() *api.AdminClient { return cl.api.Admin }

// adminErr maps a MeshAdmin refusal: trust is ExitTrust, the rest as any
// call's.
func adminErr(err error, p place) error {
	if err == nil {
		return nil
	}
	var se *api.StatusError
	if errors.As(err, &se) && hookwire.CodeOf(se) == hookwire.PermissionDenied {
		return withCode(ExitTrust, errors.New(text.OneLine(se.Message())))
	}
	return rpcErr(err, p)
}

func addTokenFlags(c *cobra.Command) {
	c.Flags().Bool("server", false, "the token makes servers (raft voters holding the CA key); default: nodes. Read from this command line only, never from HARN_SERVER or the config file")
	commandLineOnly(c, "server")
	c.Flags().Duration("ttl", api.DefaultTokenTTL, "how long the token may be redeemed")
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

// printToken prints a new token (stdout) and, on stderr, what it allows
// and the exact command that joins another node with it: this node's
// advertised gossip address (t.JoinAddr, else join), and --server for a
// server token.
func printToken(c *cobra.Command, t wire.TokenCreated, join, rpc string) error {
	if t.JoinAddr != "" {
		join, rpc = t.JoinAddr, t.JoinRPC
	}
	if asJSON(c) {
		return writeJSON(c, map[string]any{"join_token": t.Token, "id": t.ID, "role": t.Role, "expires": t.Expires,
			"join": joinHint(t, join, rpc)})
	}
	fmt.Fprintln(c.OutOrStdout(), t.Token)
	uses := "any number of joins"
	if t.Uses > 0 {
		uses = fmt.Sprintf("%d join(s)", t.Uses)
	}
	fmt.Fprintf(c.ErrOrStderr(), "join token %s for role %s: %s until %s\n", t.ID, t.Role, uses, t.Expires.Format(time.RFC3339))
	fmt.Fprintf(c.ErrOrStderr(), "on the other node: %s\n", joinHint(t, join, rpc))
	if h, _, err := net.SplitHostPort(join); err == nil {
		if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
			fmt.Fprintf(c.ErrOrStderr(), "(%s reaches this machine only; for other machines start this node with --advertise ADDR or --bind ADDR)\n", h)
		}
	}
	return nil
}

// joinHint is the command that joins a node with t at join, with
// --join-rpc rpc unless rpc is where the joiner looks by default (the
// gossip port plus 2, on the same host).
func joinHint(t wire.TokenCreated, join, rpc string) string {
	args := []string{"harn", "node"}
	if t.Role == api.RoleServer {
		args = append(args, "--server")
	}
	args = append(args, "--join", shellQuote(join))
	if rpc != "" && rpc != defaultJoinRPC(join) {
		args = append(args, "--join-rpc", shellQuote(rpc))
	}
	return strings.Join(append(args, "--join-token", shellQuote(t.Token)), " ")
}

// defaultJoinRPC is the cluster gRPC address a joiner derives from a
// gossip seed: its port plus 2.
func defaultJoinRPC(join string) string {
	h, p, err := net.SplitHostPort(join)
	if err != nil {
		return ""
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return ""
	}
	return net.JoinHostPort(h, strconv.Itoa(n+2))
}

// offlineJoinAddr is the gossip and cluster gRPC addresses the node of
// this data dir will advertise, from the settings `harn node` reads (the
// environment, then the config file): --advertise or --bind, else this
// machine's first private address, with --gossip-port and --rpc-port.
// server says whether that node is a server.
func offlineJoinAddr(c *cobra.Command, server bool) (join, rpc string) {
	bind := setting(c, "bind", "")
	if bind == "" && !server && strings.TrimSpace(setting(c, "join", "")) == "" {
		bind = "127.0.0.1" // a lone node (no --join, not a server) binds loopback alone
	}
	host, err := layout.AdvertiseHost(setting(c, "advertise", ""), bind)
	if err != nil {
		host = "<this-host>"
	}
	port := setting(c, "gossip-port", strconv.Itoa(layout.DefaultGossipPort))
	rpcPort := setting(c, "rpc-port", strconv.Itoa(layout.DefaultRPCPort))
	return net.JoinHostPort(host, port), net.JoinHostPort(host, rpcPort)
}

func settingTrue(v string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}

func newMeshInitCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "init",
		Short: "on the first server, before its node starts: make the mesh CA, the gossip key and a join token",
		Long: `mesh init makes the mesh CA, the gossip key and this server's certificate in the
data dir, and a join token. It records the node name and the server role it used
in the config file (--config, else HARN_CONFIG, else the default one), so that a
plain ` + "`harn node`" + ` starts as the server the certificate is for. A config
file named there that does not exist yet is made (0600, in a 0700 folder).`,
		Args:        noArgs,
		Annotations: map[string]string{annotWritesConfig: "true"},
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
			path, _, fromFlag := configPath(c)
			if path == "" {
				return withCode(ExitTrust, fmt.Errorf("%w: no config folder (set HOME or XDG_CONFIG_HOME, or pass --config)", ErrConfigWrite))
			}
			if err := recordConfig(path, []string{"name", "server"}, map[string]any{"name": res.Name, "server": true}); err != nil {
				return withCode(ExitPermission, err)
			}
			next := startHint(p)
			if fromFlag {
				next += " --config " + shellQuote(path)
			}
			if !asJSON(c) {
				what := "made the mesh CA"
				if !res.Created {
					what = "kept the mesh CA"
				}
				fmt.Fprintf(c.ErrOrStderr(), "%s %s in %s for server %s (recorded in %s); start this server with `%s`\n",
					what, res.Fingerprint, layout.TrustDir(p.DataDir), text.OneLine(res.Name), path, next)
			}
			join, rpc := offlineJoinAddr(c, true)
			return printToken(c, res.Token, join, rpc)
		},
	}
	c.Flags().String("name", "", "this server's node name (default: the hostname); recorded in the config file for harn node")
	c.Flags().String("config", "", "config `file` to record the name and role in (default: HARN_CONFIG, else the one harn node reads)")
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
	if err := secretfile.Check(file); err != nil {
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
