package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/hookwire"
	"github.com/harn-dev/harn/util/text"
)

// `harn trust add|list|remove`: the project directories whose .harn files
// (mcp.json, agent profiles, skills, hooks) this node's harn sessions may
// run or load. Not the mesh's trust (harn mesh, harn token): a directory's.

func newDirTrustCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "trust",
		Short: "trust a project directory's .harn files (MCP servers, agent profiles, skills, hooks) on this node",
		Long: `trust records, on the local node, the project directories whose .harn files
harn's own agent may run or load: .harn/mcp.json's MCP servers, .harn/agents
profiles, .harn/skills and .harn/hooks. Until a directory is trusted, harn ask and
harn chat start no server of it and load none of its files (and say so). Trust
is kept with a digest of those files: a changed file is untrusted until trusted
again. A directory another user owns, or that others may write, is trusted only
with --allow-other-owner. The mesh's trust (certificates, tokens) is harn mesh
and harn token.`,
		Args: hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	add := &cobra.Command{
		Use:   "add DIR",
		Short: "trust DIR's .harn files as they are now (a changed file asks again)",
		Args:  exactArgs(1, "the project directory"),
		RunE: func(c *cobra.Command, args []string) error {
			other, _ := c.Flags().GetBool("allow-other-owner")
			res, err := dirTrustCall(c, &api.DirTrustRequest{Op: "add", Dir: absDir(args[0]), AllowOtherOwner: other})
			if err != nil {
				return err
			}
			if hook.AsJSON(c) {
				return hook.WriteJSON(c, trustedJSON(res.GetDirs()))
			}
			ck := res.GetCheck()
			fmt.Fprintf(c.OutOrStdout(), "trusted %s (digest %s)\n", text.Sanitize(ck.GetDir()), short(ck.GetDigest()))
			for _, l := range trustLines(ck) {
				fmt.Fprintln(c.OutOrStdout(), "  "+l)
			}
			return nil
		},
	}
	add.Flags().Bool("allow-other-owner", false, "trust a directory another user owns, or that others may write (its files run as you)")
	hook.CommandLineOnly(add, "allow-other-owner")
	hook.AddJSONFlag(add)
	list := &cobra.Command{
		Use:   "list",
		Short: "list the directories this node trusts",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			res, err := dirTrustCall(c, &api.DirTrustRequest{Op: "list"})
			if err != nil {
				return err
			}
			if hook.AsJSON(c) {
				return hook.WriteJSON(c, trustedJSON(res.GetDirs()))
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DIR\tDIGEST\tADDED\tBY\tOTHER_OWNER")
			for _, d := range res.GetDirs() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\n", text.Cell(d.GetDir()), short(d.GetDigest()),
					d.GetAddedAt().AsTime().Format(time.RFC3339), text.Cell(d.GetBy()), d.GetOtherOwner())
			}
			return tw.Flush()
		},
	}
	hook.AddJSONFlag(list)
	remove := &cobra.Command{
		Use:   "remove DIR",
		Short: "stop trusting DIR: its .harn files no longer run or load",
		Args:  exactArgs(1, "the project directory"),
		RunE: func(c *cobra.Command, args []string) error {
			dir := absDir(args[0])
			res, err := dirTrustCall(c, &api.DirTrustRequest{Op: "remove", Dir: dir})
			if err != nil {
				return err
			}
			if !res.GetRemoved() {
				return hook.WithCode(hook.ExitNotFound, fmt.Errorf("%s was not trusted on this node; `harn trust list` shows the trusted ones", hook.ShellQuote(dir)))
			}
			fmt.Fprintf(c.OutOrStdout(), "%s is no longer trusted\n", text.Sanitize(dir))
			return nil
		},
	}
	c.AddCommand(add, list, remove)
	return c
}

// absDir is dir as the node reads it: absolute (the node's working
// directory is not this command's).
func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}

func short(d string) string { return d[:min(len(d), 12)] }

// dirTrustCall makes one trust op on the local node.
func dirTrustCall(c *cobra.Command, req *api.DirTrustRequest) (*api.DirTrustResponse, error) {
	var res *api.DirTrustResponse
	err := withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
		var err error
		res, err = cl.api.DirTrust(ctx, req)
		return dirTrustErr(err, p)
	})
	return res, err
}

// dirTrustErr maps a trust op's refusal: another uid is a permission
// problem (13), a rule (another owner, changed files) a refusal (4).
func dirTrustErr(err error, p hook.Place) error {
	if errors.Is(err, hookwire.ErrPermission) {
		var se *hookwire.StatusError
		if errors.As(err, &se) {
			return hook.WithCode(hook.ExitPermission, errors.New(text.OneLine(se.Message())))
		}
	}
	return hook.RpcErr(err, p)
}

// trustLines say what a directory runs or loads, one thing a line, for a
// person to judge: each MCP server with its command, then the skills,
// agent profiles and hooks.
func trustLines(ck *api.DirTrustCheck) []string {
	var out []string
	for _, s := range ck.GetServers() {
		out = append(out, "MCP server "+text.Sanitize(s.GetName())+" runs: "+text.OneLine(s.GetCommand()))
	}
	if e := ck.GetServersError(); e != "" {
		out = append(out, ".harn/mcp.json does not parse: "+text.OneLine(e))
	}
	for _, k := range []struct {
		what  string
		names []string
	}{{"skills", ck.GetSkills()}, {"agent profiles", ck.GetAgents()}, {"hooks", ck.GetHooks()}} {
		if len(k.names) > 0 {
			out = append(out, k.what+": "+text.OneLine(text.Clip(strings.Join(k.names, ", "), 300)))
		}
	}
	return out
}

type trustedDirJSON struct {
	Dir        string    `json:"dir"`
	Digest     string    `json:"digest"`
	AddedAt    time.Time `json:"added_at"`
	By         string    `json:"by,omitempty"`
	OtherOwner bool      `json:"other_owner"`
}

func trustedJSON(ds []*api.TrustedDir) []trustedDirJSON {
	out := make([]trustedDirJSON, 0, len(ds))
	for _, d := range ds {
		out = append(out, trustedDirJSON{Dir: d.GetDir(), Digest: d.GetDigest(), AddedAt: d.GetAddedAt().AsTime(), By: d.GetBy(), OtherOwner: d.GetOtherOwner()})
	}
	return out
}
