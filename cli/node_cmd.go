package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/util/text"
)

// newNodeCmd is `harn node`: harnd's node command (its flags, and
// running harnd with this command line), with the client's subcommands.
func newNodeCmd() *cobra.Command {
	c := daemon.NewNodeCmd()
	c.AddCommand(newNodeErrorsCmd(), newNodeStatusCmd(), newNodePIDCmd())
	return c
}

func newNodeErrorsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "errors",
		Short: "list the diagnostics the node recorded for bad hook input (--clear: then delete them)",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p := hook.PlaceOf(c)
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
				return hook.RpcErr(err, p)
			}
			ds := make([]wire.Diagnostic, 0, len(res.Diagnostics))
			for _, d := range res.Diagnostics {
				ds = append(ds, wire.DiagnosticFromAPI(d))
			}
			if hook.AsJSON(c) {
				return hook.WriteJSON(c, ds)
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
	hook.AddJSONFlag(c)
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
		Args:  hook.NoArgs,
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
	p := hook.PlaceOf(c)
	if dead, err := hook.ProbeSocket(p.Socket); err != nil {
		return nil, err
	} else if dead {
		return nil, hook.NoNode(p)
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
		return nil, hook.RpcErr(err, p)
	}
	return st, nil
}

func newNodeStatusCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "status",
		Short: "show whether the local node runs, and its counts",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p := hook.PlaceOf(c)
			st, err := nodeStatus(c)
			if err != nil {
				return err
			}
			out := map[string]any{"node": st.Node, "version": st.Version, "data_dir": st.DataDir,
				"socket": p.Socket, "pid": st.Pid, "live_sessions": st.LiveSessions, "sessions": st.Sessions,
				"started_at": time.Unix(0, st.StartedUnixNano).UTC().Format(time.RFC3339)}
			if hook.AsJSON(c) {
				return hook.WriteJSON(c, out)
			}
			fmt.Fprintf(c.OutOrStdout(), "node %s (pid %d, %s) on %s: %d live of %d sessions\n",
				text.OneLine(st.Node), st.Pid, text.OneLine(st.Version), text.OneLine(p.Socket), st.LiveSessions, st.Sessions)
			return nil
		},
	}
	hook.AddJSONFlag(c)
	return c
}
