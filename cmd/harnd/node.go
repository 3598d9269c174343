package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/text"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// startCPUProfile writes a CPU profile of the node's whole run to path
// (HARN_CPU_PROFILE, a diagnostic: where an idle node's CPU goes; see
// docs/perf-mesh.md); "" profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeHeapProfile writes the heap's profile to path as the node stops
// (HARN_HEAP_PROFILE, a diagnostic: where an idle node's memory goes);
// "" writes nothing.
func writeHeapProfile(path string, log *slog.Logger) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		log.Warn("heap profile", "err", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		log.Warn("heap profile", "err", err)
	}
}

// runNode runs the node in the foreground until SIGINT or SIGTERM.
func runNode(c *cobra.Command) error {
	cfg := node.DefaultConfig()
	place := hook.PlaceOf(c)
	cfg.DataDir, cfg.Socket = place.DataDir, place.Socket
	cfg.Version = hook.Version()
	if name, _ := c.Flags().GetString("name"); name != "" {
		cfg.Name = name
	}
	cfg.ReapInterval, _ = c.Flags().GetDuration("reap-interval")
	cfg.SilenceAfter, _ = c.Flags().GetDuration("silence-after")
	cfg.PeerContextBytes, _ = c.Flags().GetInt("peer-context-bytes")
	cfg.Claims, _ = c.Flags().GetString("claims")
	if on, err := c.Flags().GetBool("compaction.enabled"); err == nil {
		cfg.NoCompaction = !on
	}
	if err := agentBoundsConfig(c, &cfg); err != nil {
		return err
	}
	if _, err := claims.ParseMode(cfg.Claims); err != nil {
		return hook.UsageErr(err)
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
		return hook.UsageErr(fmt.Errorf("--log-level %q: use debug, info, warn or error", lvl))
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
	if err := agentConfig(c, &cfg); err != nil { // agent_config.go
		return err
	}
	hostedConfig(c, &cfg)
	stopTracing, err := openTracing(c, &cfg) // tracing.go
	if err != nil {
		return err
	}
	defer stopTracing()
	stopProfile, err := startCPUProfile(os.Getenv("HARN_CPU_PROFILE"))
	if err != nil {
		return hook.UsageErr(fmt.Errorf("HARN_CPU_PROFILE: %v", err))
	}
	defer stopProfile()
	defer writeHeapProfile(os.Getenv("HARN_HEAP_PROFILE"), cfg.Logger)
	n, err := node.New(cfg)
	if err != nil {
		return hook.UsageErr(err)
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
	announce(c.ErrOrStderr(), isTerminal(c.ErrOrStderr()), cfg.Logger,
		readyInfo{name: n.Name(), boardURL: n.BoardURL(), hints: daemon.HintsFor(cfg.DataDir, cfg.Socket)})
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
	t := time.NewTimer(d) //clock:real the process exits after d of real time, whatever a clock says
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
		return hook.WithCode(hook.ExitPortInUse, fmt.Errorf("%w (exit %d)", err, hook.ExitPortInUse))
	case errors.Is(err, node.ErrLocked):
		return hook.WithCode(hook.ExitConflict, err)
	case errors.Is(err, node.ErrDataDirUnsafe):
		return hook.WithCode(hook.ExitPermission, err)
	case errors.Is(err, node.ErrTrust):
		return hook.WithCode(hook.ExitTrust, err)
	case errors.Is(err, node.ErrTokenFile):
		return hook.WithCode(hook.ExitPermission, err)
	case errors.Is(err, node.ErrGossipKey) || errors.Is(err, node.ErrConfig):
		return hook.UsageErr(err)
	}
	return err
}

// meshConfig reads the mesh flags into cc.
func meshConfig(c *cobra.Command, cc *node.ClusterConfig) error {
	f := c.Flags()
	if err := registryAuthConfig(f, cc); err != nil {
		return err
	}
	noMesh, _ := f.GetBool("no-mesh")
	cc.Enabled = !noMesh
	cc.Bind, _ = f.GetString("bind")
	cc.Advertise, _ = f.GetString("advertise")
	cc.GossipPort, _ = f.GetInt("gossip-port")
	cc.RaftPort, _ = f.GetInt("raft-port")
	cc.RPCPort, _ = f.GetInt("rpc-port")
	hp, _ := f.GetString("http-port")
	_, port, err := node.ParseHTTPAddr(hp)
	if err != nil {
		return hook.UsageErr(err)
	}
	cc.HTTPPort = port
	cc.Join, _ = f.GetStringSlice("join")
	cc.Server, _ = f.GetBool("server")
	cc.Replica, _ = f.GetBool("replica")
	cc.BootstrapExpect, _ = f.GetInt("bootstrap-expect")
	mp, _ := f.GetString("mesh-profile")
	rp, _ := f.GetString("raft-profile")
	cc.MeshProfile, cc.RaftProfile = node.MeshProfile(mp), node.RaftProfile(rp)
	if k, _ := f.GetString("gossip-key"); k != "" {
		key, err := node.DecodeGossipKey(k)
		if err != nil {
			return hook.UsageErr(fmt.Errorf("--gossip-key: %v", err))
		}
		cc.GossipKey = key
	}
	tok, err := daemon.ReadJoinToken(c)
	if err != nil {
		return err
	}
	cc.JoinToken = tok
	cc.JoinRPC, _ = f.GetStringSlice("join-rpc")
	cc.InsecureMesh, _ = f.GetBool("insecure-mesh")
	cc.RemoteControl, _ = f.GetString("remote-control")
	mib, _ := f.GetInt("max-peer-reply-mib")
	if mib < 1 || mib > 1024 {
		return hook.UsageErr(fmt.Errorf("--max-peer-reply-mib %d: use 1 to 1024", mib))
	}
	cc.MaxPeerReply = mib << 20
	if err := cc.Validate(); err != nil {
		return hook.UsageErr(err)
	}
	return nil
}

func registryAuthConfig(f *pflag.FlagSet, cc *node.ClusterConfig) error {
	s, _ := f.GetString("notify-admins")
	admins, err := node.ParseNotifyAdmins(s)
	if err != nil {
		return hook.UsageErr(err)
	}
	cc.NotifyAdmins = admins
	q, _ := f.GetInt("session-quota")
	if q < 1 {
		return hook.UsageErr(fmt.Errorf("--session-quota %d: give at least 1 (default %d)", q, node.DefaultSessionQuota))
	}
	cc.SessionQuota = q
	return nil
}

// launcherConfig reads the launchers (the config file's [launchers], then
// --launcher, which replaces a definition of the same name) and
// --remote-exec into cfg.
func launcherConfig(c *cobra.Command, cfg *node.Config) error {
	fromFile, err := daemon.ConfigLaunchers(c)
	if err != nil {
		return hook.UsageErr(err) // applySettings reported it first
	}
	l := tasks.Launchers{}
	maps.Copy(l, fromFile)
	defs, _ := c.Flags().GetStringArray("launcher")
	for _, d := range defs {
		name, argv, err := tasks.ParseLauncherFlag(d)
		if err != nil {
			return hook.UsageErr(err)
		}
		l[name] = argv
	}
	if err := l.Check(); err != nil {
		return hook.UsageErr(err)
	}
	rx, _ := c.Flags().GetString("remote-exec")
	names, err := tasks.ParseRemoteExec(rx, l)
	if err != nil {
		return hook.UsageErr(err)
	}
	if rc, _ := trust.ParseRemoteControl(cfg.Cluster.RemoteControl); len(names) > 0 && rc.Off() {
		cfg.Logger.Warn(fmt.Sprintf("--remote-exec %v has no effect while --remote-control is off", names))
	}
	cfg.Launchers, cfg.Cluster.RemoteExec = l, names
	return nil
}

// webConfig reads the web flags into cfg: the board's token (the file
// first, then --http-token; both is a usage error) and the limits.
func webConfig(c *cobra.Command, cfg *node.Config) error {
	f := c.Flags()
	cfg.HTTPToken, _ = f.GetString("http-token")
	if path, _ := f.GetString("http-token-file"); path != "" {
		if cfg.HTTPToken != "" {
			return hook.UsageErr(errors.New("--http-token and --http-token-file are both set; keep the file (the flag shows in ps)"))
		}
		tok, err := hook.ReadSecretFile(path)
		if err != nil {
			return err
		}
		cfg.HTTPToken = tok
	}
	if u, _ := f.GetString("http-public-url"); u != "" {
		pu, err := node.ParsePublicURL(u)
		if err != nil {
			return hook.UsageErr(err)
		}
		cfg.Web.PublicURL = pu
	}
	if path, _ := f.GetString("metrics-token-file"); path != "" {
		tok, err := hook.ReadSecretFile(path)
		if err != nil {
			return err
		}
		cfg.Web.MetricsToken = tok
	}
	l := &cfg.Web.Limits
	for _, d := range []struct {
		flag string
		v    *time.Duration
	}{{"http-read-timeout", &l.ReadTimeout}, {"http-write-timeout", &l.WriteTimeout}, {"http-idle-timeout", &l.IdleTimeout}} {
		*d.v, _ = f.GetDuration(d.flag)
		if *d.v <= 0 {
			return hook.UsageErr(errors.New("--" + d.flag + " must be a positive duration, e.g. 30s"))
		}
	}
	l.ReadHeaderTimeout = min(board.DefaultLimits.ReadHeaderTimeout, l.ReadTimeout)
	for _, n := range []struct {
		flag string
		v    *int
	}{{"http-max-streams", &l.MaxStreams}, {"http-max-client-streams", &l.MaxClientStreams}, {"http-max-peer-conns", &l.MaxPeerConns}} {
		*n.v, _ = f.GetInt(n.flag)
		if *n.v <= 0 {
			return hook.UsageErr(errors.New("--" + n.flag + " must be at least 1"))
		}
	}
	return nil
}

// notifyConfig reads the notification flags of `harn node` into nc.
func notifyConfig(c *cobra.Command, server bool, nc *node.NotifyConfig) error {
	nc.AllowPrivate, _ = c.Flags().GetBool("allow-private")
	v, _ := c.Flags().GetString("desktop-notify")
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "auto", "":
		nc.Desktop = !server
	case "on", "true", "yes", "1":
		nc.Desktop = true
	case "off", "false", "no", "0":
		nc.Desktop = false
	default:
		return hook.UsageErr(fmt.Errorf("--desktop-notify %q: use on, off or auto", v))
	}
	return nil
}

// gossipKeyFromFile reads --gossip-key-file into cc.
func gossipKeyFromFile(c *cobra.Command, cc *node.ClusterConfig) error {
	path, _ := c.Flags().GetString("gossip-key-file")
	if path == "" {
		return nil
	}
	if k, _ := c.Flags().GetString("gossip-key"); k != "" {
		return hook.UsageErr(errors.New("--gossip-key and --gossip-key-file are both set; keep one (the file keeps the key out of ps)"))
	}
	s, err := hook.ReadSecretFile(path)
	if err != nil {
		return err
	}
	key, err := node.DecodeGossipKey(s)
	if err != nil {
		return hook.UsageErr(fmt.Errorf("--gossip-key-file %s: %v; make one with `harn keygen`", text.OneLine(path), err))
	}
	cc.GossipKey = key
	return nil
}

// setPrivateUmask makes every file the process creates private to its
// user (`harn node`: Pebble's and raft's files).
func setPrivateUmask() { unix.Umask(0o077) }

// hostedConfig reads the hosting flags (--max-hosted, --remote-watch)
// into cfg; node.New validates them. A remote run's directory is checked
// against --workspace (agentConfig's cfg.Remote).
func hostedConfig(c *cobra.Command, cfg *node.Config) {
	f := c.Flags()
	if m, err := f.GetInt("max-hosted"); err == nil {
		cfg.Hosted.Max = m
	}
	cfg.Hosted.RemoteWatch, _ = f.GetString("remote-watch")
	if g, err := time.ParseDuration(os.Getenv("HARN_TASK_GRACE")); err == nil && g > 0 {
		cfg.Hosted.Grace = g
	}
}
