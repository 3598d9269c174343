package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/util/secretfile"
	"github.com/harn-dev/harn/util/text"
)

// `mesh init` and `token create` (offline): their flags, and the token
// they print with the command that joins another node with it.

func AddTokenFlags(c *cobra.Command) {
	c.Flags().Bool("server", false, "the token makes servers (raft voters holding the CA key); default: nodes. Read from this command line only, never from HARN_SERVER or the config file")
	hook.CommandLineOnly(c, "server")
	c.Flags().Duration("ttl", api.DefaultTokenTTL, "how long the token may be redeemed")
	c.Flags().Int("uses", 0, "how many joins the token allows (0: any number within its TTL)")
	hook.AddJSONFlag(c)
}

func TokenArgs(c *cobra.Command) (wire.TokenCreateArgs, error) {
	var a wire.TokenCreateArgs
	a.Server, _ = c.Flags().GetBool("server")
	a.TTL, _ = c.Flags().GetDuration("ttl")
	a.Uses, _ = c.Flags().GetInt("uses")
	if a.TTL <= 0 || a.Uses < 0 {
		return a, hook.UsageErr(errors.New("--ttl must be positive and --uses at least 0"))
	}
	return a, nil
}

// printToken prints a new token (stdout) and, on stderr, what it allows
// and the exact command that joins another node with it: this node's
// advertised gossip address (t.JoinAddr, else join), and --server for a
// server token.
func PrintToken(c *cobra.Command, t wire.TokenCreated, join, rpc string) error {
	if t.JoinAddr != "" {
		join, rpc = t.JoinAddr, t.JoinRPC
	}
	if hook.AsJSON(c) {
		return hook.WriteJSON(c, map[string]any{"join_token": t.Token, "id": t.ID, "role": t.Role, "expires": t.Expires,
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
	args = append(args, "--join", hook.ShellQuote(join))
	if rpc != "" && rpc != defaultJoinRPC(join) {
		args = append(args, "--join-rpc", hook.ShellQuote(rpc))
	}
	return strings.Join(append(args, "--join-token", hook.ShellQuote(t.Token)), " ")
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
func OfflineJoinAddr(c *cobra.Command, server bool) (join, rpc string) {
	bind := hook.Setting(c, "bind", "")
	if bind == "" && !server && strings.TrimSpace(hook.Setting(c, "join", "")) == "" {
		bind = "127.0.0.1" // a lone node (no --join, not a server) binds loopback alone
	}
	host, err := layout.AdvertiseHost(hook.Setting(c, "advertise", ""), bind)
	if err != nil {
		host = "<this-host>"
	}
	port := hook.Setting(c, "gossip-port", strconv.Itoa(layout.DefaultGossipPort))
	rpcPort := hook.Setting(c, "rpc-port", strconv.Itoa(layout.DefaultRPCPort))
	return net.JoinHostPort(host, port), net.JoinHostPort(host, rpcPort)
}

func SettingTrue(v string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}

func NewMeshInitCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "init",
		Short: "on the first server, before its node starts: make the mesh CA, the gossip key and a join token",
		Long: `mesh init makes the mesh CA, the gossip key and this server's certificate in the
data dir, and a join token. It records the node name and the server role it used
in the config file (--config, else HARN_CONFIG, else the default one), so that a
plain ` + "`harn node`" + ` starts as the server the certificate is for. A config
file named there that does not exist yet is made (0600, in a 0700 folder).`,
		Args:        hook.NoArgs,
		Annotations: map[string]string{hook.AnnotWritesConfig: "true"},
		RunE: func(c *cobra.Command, _ []string) error {
			d := Of(c)
			if d == nil || d.InitMesh == nil {
				return Exec(c) // the trust store is harnd's
			}
			p := hook.PlaceOf(c)
			name, _ := c.Flags().GetString("name")
			a, err := TokenArgs(c)
			if err != nil {
				return err
			}
			res, err := d.InitMesh(p.DataDir, name, a)
			if err != nil {
				if hook.ExitCode(err) == hook.ExitUsage {
					return err
				}
				return hook.WithCode(hook.ExitTrust, err)
			}
			path, _, fromFlag := hook.ConfigPath(c)
			if path == "" {
				return hook.WithCode(hook.ExitTrust, fmt.Errorf("%w: no config folder (set HOME or XDG_CONFIG_HOME, or pass --config)", hook.ErrConfigWrite))
			}
			if err := hook.RecordConfig(path, []string{"name", "server"}, map[string]any{"name": res.Name, "server": true}); err != nil {
				return hook.WithCode(hook.ExitPermission, err)
			}
			next := hook.StartHint(p)
			if fromFlag {
				next += " --config " + hook.ShellQuote(path)
			}
			if !hook.AsJSON(c) {
				what := "made the mesh CA"
				if !res.Created {
					what = "kept the mesh CA"
				}
				fmt.Fprintf(c.ErrOrStderr(), "%s %s in %s for server %s (recorded in %s); start this server with `%s`\n",
					what, res.Fingerprint, layout.TrustDir(p.DataDir), text.OneLine(res.Name), path, next)
			}
			join, rpc := OfflineJoinAddr(c, true)
			return PrintToken(c, res.Token, join, rpc)
		},
	}
	c.Flags().String("name", "", "this server's node name (default: the hostname); recorded in the config file for harn node")
	c.Flags().String("config", "", "config `file` to record the name and role in (default: HARN_CONFIG, else the one harn node reads)")
	AddTokenFlags(c)
	return c
}

// readJoinToken reads --join-token, or --join-token-file (which must not be
// readable by others).
func ReadJoinToken(c *cobra.Command) (string, error) {
	tok, _ := c.Flags().GetString("join-token")
	file, _ := c.Flags().GetString("join-token-file")
	if file == "" {
		return strings.TrimSpace(tok), nil
	}
	if tok != "" {
		return "", hook.UsageErr(errors.New("pass --join-token or --join-token-file, not both"))
	}
	if err := secretfile.Check(file); err != nil {
		return "", hook.WithCode(hook.ExitTrust, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", hook.UsageErr(fmt.Errorf("--join-token-file: %w", err))
	}
	return strings.TrimSpace(string(b)), nil
}

// NewTokenCreateCmd is `token create`: through the local node when one
// runs (live, harn's client; nil in harnd), else offline in its data dir,
// which is harnd's work (harn runs harnd for it).
func NewTokenCreateCmd(live func(c *cobra.Command, a wire.TokenCreateArgs) error) *cobra.Command {
	c := &cobra.Command{
		Use:   "create",
		Short: "make a join token (through the local server node, or offline in its data dir when no node runs)",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			a, err := TokenArgs(c)
			if err != nil {
				return err
			}
			p := hook.PlaceOf(c)
			if !hook.SocketDead(p.Socket) {
				if live == nil {
					return hook.WithCode(hook.ExitConflict, fmt.Errorf("a node runs on %s: make the token through it with `harn token create`", text.OneLine(p.Socket)))
				}
				return live(c, a)
			}
			d := Of(c)
			if d == nil || d.CreatePendingToken == nil {
				return Exec(c) // offline, the trust store is harnd's
			}
			t, err := d.CreatePendingToken(p.DataDir, a)
			if err != nil {
				return hook.WithCode(hook.ExitTrust, err)
			}
			join, rpc := OfflineJoinAddr(c, SettingTrue(hook.Setting(c, "server", "false")))
			return PrintToken(c, t, join, rpc)
		},
	}
	AddTokenFlags(c)
	return c
}
