package daemon

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/layout"
)

// NewNodeCmd is `node` with every flag of the node: harnd runs it, harn
// runs harnd with the same command line (and adds its client subcommands:
// status, pid, errors).
func NewNodeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "node",
		Short: "run the harn node for this machine in the foreground",
		Args:  hook.NoArgs,
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
	AddMeshFlags(c)
	addLauncherFlags(c)
	addHostedFlags(c)
	addNodeAgentFlags(c)
	addWebFlags(c)
	hook.AddSecretFileFlags(c)
	addNotifyFlags(c)
	return c
}

// runNode runs the node: in harnd, here; in harn, by running harnd with
// the same command line.
func runNode(c *cobra.Command, _ []string) error {
	if d := Of(c); d != nil && d.RunNode != nil {
		return d.RunNode(c)
	}
	return Exec(c)
}

// AddMeshFlags adds the node's mesh flags (also read by harn doctor).
func AddMeshFlags(c *cobra.Command) {
	f := c.Flags()
	addRegistryAuthFlags(f)
	f.String("bind", "", "address the gossip, raft and rpc listeners bind (default 127.0.0.1 alone, 0.0.0.0 in a mesh)")
	f.String("advertise", "", "address other nodes use to reach this one (default: the bind address, or the first private address)")
	f.Int("gossip-port", layout.DefaultGossipPort, "gossip (memberlist) port, UDP and TCP; 0 picks a free one")
	f.Int("raft-port", layout.DefaultRaftPort, "registry (raft) port; 0 picks a free one")
	f.Int("rpc-port", layout.DefaultRPCPort, "cluster gRPC port; 0 picks a free one")
	f.String("http-port", "127.0.0.1:7713", "web board and /metrics, always behind a token (harn web open): a port (on 127.0.0.1) or host:port; 0 serves none")
	f.StringSlice("join", nil, "gossip address of a node to join, host:port (repeatable)")
	f.Bool("server", false, "be a registry server: a raft voter holding the registry's log (3 or 5 per mesh); every other node follows the registry from a server")
	f.Bool("replica", false, "be a read replica: a non-voting raft member holding the registry's log (a far site); never with --server")
	f.Int("bootstrap-expect", 0, "form the registry when this many servers have met (with --server)")
	f.String("gossip-key", "", "base64 32-byte `key` encrypting gossip (make one with: harn keygen)")
	f.String("mesh-profile", "lan", "gossip timers: lan, or local (fast; tests)")
	f.String("raft-profile", "lan", "registry timers: lan (1 s), or fast (tests)")
	f.Bool("no-mesh", false, "run without the mesh: no network listener, local sessions only")
	f.String("join-token", "", "join token (harn token create), used at the first start only")
	f.String("join-token-file", "", "file holding the join token (mode 0600; keeps it out of ps)")
	f.StringSlice("join-rpc", nil, "cluster gRPC address of a server to join through (default: each --join seed's port plus 2)")
	f.Bool("insecure-mesh", false, "run raft and the cluster gRPC in plaintext, on loopback too (trusted networks only; default: mutual TLS, with a CA made at the first start)")
	f.String("remote-control", "off", "who on other nodes may start, steer, cancel, approve or confirm this node's agents: off, or NODE,... and servers (callers holding a server-role certificate)")
	f.String("remote-exec", "none", "the launchers (--launcher) that callers --remote-control allows may start here: none, or NAME,...")
	f.Int("max-peer-reply-mib", layout.DefaultMaxPeerReply>>20, "largest message, in MiB, taken from a peer on the cluster gRPC (a reply to this node's call, or a request to its rpc port); larger ones are refused")
}

// addNotifyFlags adds the notification flags of `harn node`.
func addNotifyFlags(c *cobra.Command) {
	c.Flags().String("desktop-notify", "auto", "desktop notification when a session of this node needs input: on, off, or auto (on unless --server)")
	c.Flags().Bool("allow-private", false, "let webhooks reach loopback, link-local, private (RFC 1918, ULA, CGNAT), unspecified and multicast addresses")
}

// addHostedFlags adds the node's hosting flags.
func addHostedFlags(c *cobra.Command) {
	f := c.Flags()
	f.Int("max-hosted", 8, "the most agents this node hosts in terminals at once (harn run); a start over it is refused")
	f.String("remote-watch", "off", "who on other nodes may attach to this node's hosted terminals to watch, without typing: off, or NODE,... and servers (those --remote-control allows may type too)")
}
