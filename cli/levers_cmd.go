package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskapi"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/util/text"
)

// The operator's levers over task runtimes: shrinking one task's ceiling
// (harn task reduce), and the mesh-wide switches (harn capability
// revoke|restore, harn provider disable|enable).

// newTaskReduceCmd is `harn task reduce TASK CAPABILITY LEVEL`.
func newTaskReduceCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "reduce ID CAPABILITY LEVEL",
		Short: "shrink a task's ceiling: CAPABILITY (a name or a pattern) holds at most LEVEL (none, discover, inspect, load, execute) from now on",
		Long: `Shrink a task's ceiling. The ceiling only shrinks: asking a level above what a
matching capability holds is refused (exit 15). A replacement of the task
(replace, supersede) keeps the reduction. The action runs on the node that
owns the task and is recorded in its ledger.`,
		Args: cobra.ExactArgs(3),
		RunE: func(c *cobra.Command, args []string) error {
			node, _ := c.Flags().GetString("node")
			reason, _ := c.Flags().GetString("reason")
			req := &api.ReduceRequest{Task: args[0], Capability: args[1], Level: args[2], Reason: reason, Node: node}
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				res, err := cl.api.Reduce(ctx, req)
				if err != nil {
					return taskErr(err, p)
				}
				r, err := taskapi.ResultFromAPI(res.Result)
				if err != nil {
					return err
				}
				if hook.AsJSON(c) {
					return hook.WriteSortedJSON(c, r)
				}
				printTaskResult(c.OutOrStdout(), taskwire.OpGrants, r)
				return nil
			})
		},
	}
	c.Flags().String("reason", "", "why (recorded in the ledger)")
	addTaskFlags(c)
	return c
}

func newCapabilityCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "capability",
		Short: "mesh-wide capability switches: revoke a capability for every task on every node, or restore it",
		Args:  hook.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(
		newOverrideCmd("capability", "revoke NAME", "revoke a capability (a name or a pattern) for every task in the mesh; it overrides every task's grants at its next call", false),
		newOverrideCmd("capability", "restore NAME", "lift a global revocation made with the same NAME", true))
	return c
}

func newProviderCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "provider",
		Short: "mesh-wide provider switches: disable a provider's capabilities for every task on every node, or enable them again",
		Args:  hook.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(
		newOverrideCmd("provider", "disable NAME", "disable a provider ("+providerExamples()+" or mcp: an agent's own tools, or its MCP tools) for every task in the mesh", false),
		newOverrideCmd("provider", "enable NAME", "enable a disabled provider again", true))
	return c
}

// overrideJSON is the --json answer of a switch.
type overrideJSON struct {
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	Active   bool     `json:"active"`
	Changed  bool     `json:"changed"`
	Mesh     bool     `json:"mesh"`
	By       string   `json:"by"`
	Node     string   `json:"node"`
	Revoked  []string `json:"revoked"`
	Disabled []string `json:"disabled_providers"`
}

func newOverrideCmd(kind, use, short string, lift bool) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			reason, _ := c.Flags().GetString("reason")
			req := &api.OverrideRequest{Kind: kind, Name: args[0], Lift: lift, Reason: reason}
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				res, err := cl.api.Override(ctx, req)
				if err != nil {
					return taskErr(err, p)
				}
				out := overrideJSON{Kind: res.Kind, Name: res.Name, Active: res.Active, Changed: res.Changed, Mesh: res.Mesh,
					By: res.By, Node: res.Node, Revoked: nonNil(res.Revoked), Disabled: nonNil(res.DisabledProviders)}
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, out)
				}
				verb := map[string]string{"capability": "revoked", "provider": "disabled"}[kind]
				if lift {
					verb = map[string]string{"capability": "restored", "provider": "enabled"}[kind]
				}
				where := "in the mesh"
				if !out.Mesh {
					where = "on node " + out.Node + " (no mesh: until it restarts)"
				}
				note := ""
				if !out.Changed {
					note = " (no change)"
				}
				fmt.Fprintf(c.OutOrStdout(), "%s %s %s %s%s\n", kind, text.Sanitize(out.Name), verb, text.Sanitize(where), note)
				if len(out.Revoked) > 0 {
					fmt.Fprintln(c.OutOrStdout(), "revoked:", text.Sanitize(strings.Join(out.Revoked, ", ")))
				}
				if len(out.Disabled) > 0 {
					fmt.Fprintln(c.OutOrStdout(), "disabled providers:", text.Sanitize(strings.Join(out.Disabled, ", ")))
				}
				return nil
			})
		},
	}
	c.Flags().String("reason", "", "why (kept with the switch)")
	hook.AddJSONFlag(c)
	return c
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// providerExamples names two agents' providers for help text (the
// registry, presence/adapter/all, names them).
func providerExamples() string {
	a := all.Installable()
	if len(a) > 2 {
		a = a[:2]
	}
	return strings.Join(a, ", ")
}
