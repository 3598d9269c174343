package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/util/text"
)

func newNodeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "node",
		Short: "run the harn node for this machine in the foreground",
		Args:  noArgs,
		RunE:  runNode,
	}
	c.Flags().String("name", "", "node name in the mesh (default: the hostname)")
	c.Flags().String("config", "", "config file (JSON object or key = value lines; keys are flag names)")
	c.Flags().String("log-level", "info", "log level: debug, info, warn or error")
	c.Flags().Duration("reap-interval", 2*time.Second, "how often to check that agent processes still exist")
	c.Flags().Duration("silence-after", layout.DefaultSilenceAfter, "mark a working session silent after this long without evidence (its activity stays working)")
	c.Flags().Int("peer-context-bytes", layout.DefaultPeerContextBytes, "cap of the peer context injected at each prompt (most relevant sessions first)")
	c.Flags().String("claims", "enforce", "write claims: enforce (deny a write to a file another live session holds), warn (tell the agent only) or off")
	c.Flags().String("otlp-endpoint", "", "send OpenTelemetry traces of ingest and gRPC calls to this OTLP gRPC collector (host:port, or an http:// or https:// URL; default: off)")
	c.Flags().Bool("compaction.enabled", true, "harn sessions condense completed work with the model at 80% of the budget; false: only the deterministic fallback, once over budget (harn ask --compaction overrides per run)")
	addAgentBoundFlags(c)
	c.Flags().Bool("otel-log-prompts", false, "with --otlp-endpoint: record the prompt text of harn's own model requests in their spans (gen_ai.input.messages; default off)")
	addMeshFlags(c)
	addLauncherFlags(c)
	addHostedFlags(c)
	addNodeAgentFlags(c)
	addWebFlags(c)
	addSecretFileFlags(c)
	addNotifyFlags(c)
	c.AddCommand(newNodeErrorsCmd(), newNodeStatusCmd(), newNodePIDCmd())
	return c
}

// runNode runs the node: in harnd, here; in harn, by running harnd with
// the same command line.
func runNode(c *cobra.Command, _ []string) error {
	if d := daemonOf(c); d != nil && d.RunNode != nil {
		return d.RunNode(c)
	}
	return execDaemon(c)
}

func newNodeErrorsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "errors",
		Short: "list the diagnostics the node recorded for bad hook input (--clear: then delete them)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p := placeOf(c)
			limit, _ := c.Flags().GetInt("limit")
			clear, _ := c.Flags().GetBool("clear")
			cl, err := connect(c.Context(), p, 5*time.Second)
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(c.Context(), 10*time.Second)
			defer cancel()
			res, err := cl.api.Errors(ctx, &api.ErrorsRequest{Limit: int32(limit), Clear: clear})
			if err != nil {
				return rpcErr(err, p)
			}
			ds := make([]wire.Diagnostic, 0, len(res.Diagnostics))
			for _, d := range res.Diagnostics {
				ds = append(ds, wire.DiagnosticFromAPI(d))
			}
			if asJSON(c) {
				return writeJSON(c, ds)
			}
			if len(ds) == 0 {
				fmt.Fprintln(c.OutOrStdout(), "no diagnostics")
				return nil
			}
			if clear {
				defer fmt.Fprintln(c.ErrOrStderr(), "cleared every diagnostic; `harn doctor` no longer counts them")
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SEQ\tTIME\tSOURCE\tERROR")
			for _, d := range ds {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", d.Seq, text.OneLine(d.TS), text.OneLine(d.Source), text.OneLine(d.Error))
			}
			return tw.Flush()
		},
	}
	c.Flags().Int("limit", 100, "at most this many, newest first")
	c.Flags().Bool("clear", false, "after listing them, delete every diagnostic (all of them, not only those listed)")
	addJSONFlag(c)
	return c
}

// newNodePIDCmd is `harn node pid`: the process id of the node that
// serves this data dir, asked of the node itself (never a pid file a
// killed node left), so that `kill -9 $(harn node pid)` reaches that
// node and no other process.
func newNodePIDCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "pid",
		Short: "print the process id of the local node (the one on --data-dir), e.g. for kill",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := nodeStatus(c)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout(), st.Pid)
			return nil
		},
	}
}

// nodeStatus asks the local node (on --data-dir, --socket) for its status.
func nodeStatus(c *cobra.Command) (*api.StatusResponse, error) {
	p := placeOf(c)
	if dead, err := probeSocket(p.Socket); err != nil {
		return nil, err
	} else if dead {
		return nil, noNode(p)
	}
	cl, err := dial(p)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context(), 5*time.Second)
	defer cancel()
	st, err := cl.api.Status(ctx, &api.StatusRequest{})
	if err != nil {
		return nil, rpcErr(err, p)
	}
	return st, nil
}

func newNodeStatusCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "status",
		Short: "show whether the local node runs, and its counts",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p := placeOf(c)
			st, err := nodeStatus(c)
			if err != nil {
				return err
			}
			out := map[string]any{"node": st.Node, "version": st.Version, "data_dir": st.DataDir,
				"socket": p.Socket, "pid": st.Pid, "live_sessions": st.LiveSessions, "sessions": st.Sessions,
				"started_at": time.Unix(0, st.StartedUnixNano).UTC().Format(time.RFC3339)}
			if asJSON(c) {
				return writeJSON(c, out)
			}
			fmt.Fprintf(c.OutOrStdout(), "node %s (pid %d, %s) on %s: %d live of %d sessions\n",
				text.OneLine(st.Node), st.Pid, text.OneLine(st.Version), text.OneLine(p.Socket), st.LiveSessions, st.Sessions)
			return nil
		},
	}
	addJSONFlag(c)
	return c
}
