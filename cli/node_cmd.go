package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/util/text"
)

func init() { commandSet = append(commandSet, newNodeCmd) }

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
	c.Flags().Duration("silence-after", node.DefaultSilenceAfter, "mark a working session silent after this long without evidence (its activity stays working)")
	c.Flags().Int("peer-context-bytes", node.DefaultPeerContextBytes, "cap of the peer context injected at each prompt (most relevant sessions first)")
	c.Flags().String("claims", "enforce", "write claims: enforce (deny a write to a file another live session holds), warn (tell the agent only) or off")
	c.Flags().String("otlp-endpoint", "", "send OpenTelemetry traces of ingest and gRPC calls to this OTLP gRPC collector (host:port, or an http:// or https:// URL; default: off)")
	addMeshFlags(c)
	addLauncherFlags(c)
	addWebFlags(c)
	addSecretFileFlags(c)
	addNotifyFlags(c)
	c.AddCommand(newNodeErrorsCmd(), newNodeStatusCmd())
	return c
}

func runNode(c *cobra.Command, _ []string) error {
	p := placeOf(c)
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.Socket, cfg.Version = p.DataDir, p.Socket, version
	if name, _ := c.Flags().GetString("name"); name != "" {
		cfg.Name = name
	}
	cfg.ReapInterval, _ = c.Flags().GetDuration("reap-interval")
	cfg.SilenceAfter, _ = c.Flags().GetDuration("silence-after")
	cfg.PeerContextBytes, _ = c.Flags().GetInt("peer-context-bytes")
	cfg.Claims, _ = c.Flags().GetString("claims")
	if _, err := claims.ParseMode(cfg.Claims); err != nil {
		return usageErr(err)
	}
	if err := meshConfig(c, &cfg.Cluster); err != nil {
		return err
	}
	if err := gossipKeyFromFile(c, &cfg.Cluster); err != nil {
		return err
	}
	// Everything the node writes (Pebble's WAL and tables, raft's logs)
	// is private, whatever the umask it was started with.
	setPrivateUmask()
	if err := notifyConfig(c, cfg.Cluster.Server, &cfg.Notify); err != nil {
		return err
	}
	lvl, _ := c.Flags().GetString("log-level")
	var level slog.Level
	if err := level.UnmarshalText([]byte(lvl)); err != nil {
		return usageErr(fmt.Errorf("--log-level %q: use debug, info, warn or error", lvl))
	}
	hp, _ := c.Flags().GetString("http-port")
	cfg.HTTPAddr, _, _ = node.ParseHTTPAddr(hp) // checked by meshConfig
	if err := webConfig(c, &cfg); err != nil {
		return err
	}
	cfg.Logger = nodeLogger(c.ErrOrStderr(), level)
	if err := launcherConfig(c, &cfg); err != nil {
		return err
	}
	stopTracing, err := openTracing(c, &cfg) // tracing.go
	if err != nil {
		return err
	}
	defer stopTracing()
	n, err := node.New(cfg)
	if err != nil {
		return usageErr(err)
	}
	// Catch the signals before Open: the socket answers while Open still
	// joins the mesh, and a stop in that window must still be graceful.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	opened := make(chan error, 1)
	octx, cancelOpen := context.WithCancel(context.Background())
	defer cancelOpen()
	go func() { opened <- n.OpenContext(octx) }()
	select {
	case err := <-opened:
		if err != nil {
			return openErr(err)
		}
	case s := <-sig:
		// Stopped while starting (a wedged ledger open, joining, no leader
		// yet): end the open, then stop whatever it built.
		cfg.Logger.Info("stopping while starting", "signal", s.String())
		cancelOpen()
		return stopWithin(stopBound, func() error {
			if err := <-opened; err != nil {
				return nil // Open closed what it opened
			}
			return n.Close()
		})
	}
	s := <-sig
	cfg.Logger.Info("stopping", "signal", s.String())
	return stopWithin(stopBound, func() error {
		if !cfg.Cluster.Voter() {
			// A client node leaves, so that the others see "left" rather
			// than "suspect" then "dead".
			if err := n.LeaveWithin(leaveBound); err != nil {
				cfg.Logger.Warn("leave", "err", err)
			}
		}
		return n.Close()
	})
}

// nodeLogger is the node's logger: text for people on a terminal, JSON
// (one object a line, for log collectors) otherwise.
func nodeLogger(w io.Writer, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if isTerminal(w) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// stopBound bounds the stop after a signal; leaveBound the graceful leave
// within it.
const (
	stopBound  = 4500 * time.Millisecond
	leaveBound = 2 * time.Second
)

// errStopTimeout: the node did not stop within stopBound after a signal.
var errStopTimeout = errors.New("cli: the node did not stop in time after the signal; exiting anyway")

// stopWithin runs stop, and gives up waiting for it after d: the process
// exits either way.
func stopWithin(d time.Duration, stop func() error) error {
	done := make(chan error, 1)
	go func() { done <- stop() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errStopTimeout
	}
}

// openErr maps a failed start to its exit code, named in the message.
func openErr(err error) error {
	var le *node.ListenError
	switch {
	case errors.As(err, &le):
		return withCode(ExitPortInUse, fmt.Errorf("%w (exit %d)", err, ExitPortInUse))
	case errors.Is(err, node.ErrLocked):
		return withCode(ExitConflict, err)
	case errors.Is(err, node.ErrDataDirUnsafe):
		return withCode(ExitPermission, err)
	case errors.Is(err, node.ErrTrust):
		return withCode(ExitTrust, err)
	case errors.Is(err, node.ErrTokenFile):
		return withCode(ExitPermission, err)
	case errors.Is(err, node.ErrGossipKey) || errors.Is(err, node.ErrConfig):
		return usageErr(err)
	}
	return err
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
			ds := make([]ledger.Diagnostic, 0, len(res.Diagnostics))
			for _, d := range res.Diagnostics {
				ds = append(ds, node.DiagnosticFromAPI(d))
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

func newNodeStatusCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "status",
		Short: "show whether the local node runs, and its counts",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p := placeOf(c)
			if dead, err := probeSocket(p.Socket); err != nil {
				return err
			} else if dead {
				return noNode(p)
			}
			cl, err := dial(p)
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(c.Context(), 5*time.Second)
			defer cancel()
			st, err := cl.api.Status(ctx, &api.StatusRequest{})
			if err != nil {
				return rpcErr(err, p)
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
