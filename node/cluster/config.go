package cluster

import (
	"fmt"
	"net"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

// Default cluster ports.
const (
	DefaultGossipPort = layout.DefaultGossipPort
	DefaultRaftPort   = layout.DefaultRaftPort
	DefaultRPCPort    = layout.DefaultRPCPort
	DefaultHTTPPort   = layout.DefaultHTTPPort
)

// MeshProfile names the gossip timers (mesh.ProfileLAN or mesh.ProfileLocal).
type MeshProfile = mesh.Profile

// RaftProfile names the registry's raft timers (raftstore.ProfileLAN or
// raftstore.ProfileFast).
type RaftProfile = raftstore.Profile

// ErrConfig is the node's configuration error (layout.ErrConfig).
var ErrConfig = layout.ErrConfig

// Config configures the node's part in the mesh: gossip (memberlist), the
// Raft registry and the cluster gRPC service.
type Config struct {
	// Enabled runs the mesh. A node without it is one machine's node with
	// no network listener (used by tests of the single-machine path).
	Enabled bool
	// Bind is the address every cluster listener binds. Empty means
	// 127.0.0.1 for a lone node (no Join, not Server) and 0.0.0.0 otherwise.
	Bind string
	// Advertise is the address other nodes use; empty means Bind, or the
	// first private address when Bind is unspecified.
	Advertise string
	// Ports; 0 picks a free port.
	GossipPort, RaftPort, RPCPort, HTTPPort int
	// Join lists gossip seeds, host:port.
	Join []string
	// Server makes this node a Raft voter.
	Server bool
	// Replica makes this node a non-voting Raft replica (a read replica:
	// it holds the registry's log and serves its watch, without voting).
	// Every other node that is not a server holds no raft log: it follows
	// the registry from a server's watch.
	Replica bool
	// BootstrapExpect forms the cluster when this many servers have met.
	// 0 means 1 for a server that joins nobody (a lone machine), else
	// "never bootstrap; wait to be added".
	BootstrapExpect int
	// GossipKey encrypts gossip (32 bytes); nil is plaintext.
	GossipKey []byte
	// MeshProfile is mesh.ProfileLAN or mesh.ProfileLocal (fast timers,
	// tests).
	MeshProfile MeshProfile
	// RaftProfile is raftstore.ProfileLAN (1 s timers) or
	// raftstore.ProfileFast (tests).
	RaftProfile RaftProfile
	// ActivityFlush is how often coalesced activity changes are written
	// to the registry.
	ActivityFlush time.Duration
	// PresenceRefresh is how often the node gossips the digest of its
	// sessions' presence hashes, so that a peer that missed a delta notices
	// and pulls the full presence at once.
	PresenceRefresh time.Duration

	// The timers below take their default when zero.

	// ResyncInterval is how often the node compares its sessions with the
	// registry and rewrites what differs.
	ResyncInterval time.Duration
	// ForwardTimeout bounds one forward of a registry write or read to the
	// leader.
	ForwardTimeout time.Duration
	// RegistrySyncTimeout bounds how long a declaration waits for the
	// registry (and one background registry write).
	RegistrySyncTimeout time.Duration
	// OwnerReadTimeout and OwnerTraceTimeout bound the read of a session's
	// live detail, and of its events, from the node that owns it.
	OwnerReadTimeout, OwnerTraceTimeout time.Duration
	// PullTimeout bounds one anti-entropy pull of a peer's presence.
	PullTimeout time.Duration
	// WatchProgress is how often a server reports its progress on each
	// registry watch it serves while no entry comes (a follower's reads
	// are stale after three of them without one). Each report costs the
	// server about a quarter of a millisecond of CPU (docs/perf-mesh.md).
	WatchProgress time.Duration

	// Trust (see docs/security.md).

	// JoinToken is used once, at the first start without a certificate:
	// the node joins the mesh's trust through a seed's cluster gRPC.
	JoinToken string
	// JoinRPC are the seeds' cluster gRPC addresses for the join; empty
	// means each Join seed's host at its gossip port plus 2.
	JoinRPC []string
	// InsecureMesh runs a node without a certificate in plaintext (raft
	// and the cluster gRPC), on any address, loopback included. Without it
	// such a node makes its own CA at its first start, or joins with
	// JoinToken, or (with Join) refuses with ErrJoinNeedsToken.
	InsecureMesh bool
	// RemoteControl is the --remote-control policy: off (the default),
	// or NODE,... and the role servers.
	RemoteControl string
	// RemoteExec lists the launchers (Config.Launchers) that a caller the
	// policy allows may start here: none by default.
	RemoteExec []string
	// TrustSync is how often the node follows the registry's trust
	// records (revocations, gossip keyring, CAs).
	TrustSync time.Duration

	// Registry write authority (node/meshtrust/writeauth.go).

	// NotifyAdmins are the nodes, beside servers, that this server lets
	// add and remove the mesh's webhooks (--notify-admins).
	NotifyAdmins []string
	// SessionQuota is the live sessions one node may hold in the
	// registry; the leader writes it into the registry, where every
	// replica enforces it alike. 0 means raftstore.DefaultSessionQuota.
	SessionQuota int
	// MaxPeerReply bounds, in bytes, one message on the cluster gRPC: a
	// peer's reply to this node's call (a presence pull, a session's
	// trace, the registry's records) and a request to this node's rpc
	// port. A larger one is refused from its length prefix, before it is
	// read (`--max-peer-reply-mib`; 0: DefaultMaxPeerReply).
	MaxPeerReply int

	// MaxPresenceBytes bounds a peer's presence: its push/pull state
	// (mesh.Config.MaxStateSize) and the answer to a presence pull. 0
	// means DefaultMaxPresenceBytes.
	MaxPresenceBytes int

	// UnsignedGossip turns gossip signing off on a mesh with a CA
	// (benchmarks compare the two in one run; never set otherwise).
	UnsignedGossip bool
}

// DefaultMaxPeerReply is the default MaxPeerReply: 16 MiB.
const DefaultMaxPeerReply = layout.DefaultMaxPeerReply

// MaxPeerListItems bounds the entries of a list in a peer's reply (records,
// events, pending requests): within MaxPeerReply, a list of empty entries
// would still cost a slice header each.
const MaxPeerListItems = 1 << 18

// DefaultMaxPresenceBytes is the default bound of a peer's presence.
const DefaultMaxPresenceBytes = mesh.DefaultMaxStateSize

// Defaults of the ClusterConfig timers that take one when zero.
const (
	DefaultResyncInterval      = 30 * time.Second
	DefaultForwardTimeout      = 2 * time.Second
	DefaultRegistrySyncTimeout = 10 * time.Second
	DefaultOwnerReadTimeout    = 3 * time.Second
	DefaultOwnerTraceTimeout   = 5 * time.Second
	DefaultPullTimeout         = 3 * time.Second
	DefaultTrustSync           = time.Second
	DefaultWatchProgress       = 5 * time.Second
)

// WithDefaults fills the zero timers with their defaults.
func (c Config) WithDefaults() Config {
	for _, f := range []struct {
		v *time.Duration
		d time.Duration
	}{{&c.ResyncInterval, DefaultResyncInterval}, {&c.ForwardTimeout, DefaultForwardTimeout},
		{&c.RegistrySyncTimeout, DefaultRegistrySyncTimeout}, {&c.OwnerReadTimeout, DefaultOwnerReadTimeout},
		{&c.OwnerTraceTimeout, DefaultOwnerTraceTimeout}, {&c.PullTimeout, DefaultPullTimeout},
		{&c.TrustSync, DefaultTrustSync}, {&c.WatchProgress, DefaultWatchProgress}} {
		if *f.v <= 0 {
			*f.v = f.d
		}
	}
	if c.MaxPeerReply <= 0 {
		c.MaxPeerReply = DefaultMaxPeerReply
	}
	if c.MaxPresenceBytes <= 0 {
		c.MaxPresenceBytes = DefaultMaxPresenceBytes
	}
	return c
}

// DefaultConfig is a lone machine's mesh on the default ports.
func DefaultConfig() Config {
	return Config{
		Enabled:    true,
		GossipPort: DefaultGossipPort, RaftPort: DefaultRaftPort,
		RPCPort: DefaultRPCPort, HTTPPort: DefaultHTTPPort,
		MeshProfile: mesh.ProfileLAN, RaftProfile: raftstore.ProfileLAN,
		ActivityFlush:   2 * time.Second,
		PresenceRefresh: 5 * time.Second,
	}.WithDefaults()
}

// Lone reports whether the node forms a one-machine mesh by itself.
func (c Config) Lone() bool { return len(c.Join) == 0 && !c.Server }

// Voter reports whether this node is a Raft voter: a server, or a lone
// machine (which is its own one-server cluster).
func (c Config) Voter() bool { return c.Server || c.Lone() }

// RaftMember reports whether this node holds the registry's raft log: a
// voter, or a read replica. Every other node follows a server's watch.
func (c Config) RaftMember() bool { return c.Voter() || c.Replica }

// BootstrapExpectN is the number of servers to wait for before forming the
// cluster, or 0 for never.
func (c Config) BootstrapExpectN() int {
	if c.BootstrapExpect > 0 {
		return c.BootstrapExpect
	}
	if c.Voter() && len(c.Join) == 0 {
		return 1
	}
	return 0
}

// BindAddr is the address every cluster listener binds.
func (c Config) BindAddr() string {
	if c.Bind != "" {
		return c.Bind
	}
	if c.Lone() {
		return "127.0.0.1"
	}
	return "0.0.0.0"
}

// advertiseAddr is the address peers dial.
func (c Config) advertiseAddr() (string, error) {
	return layout.AdvertiseHost(c.Advertise, c.BindAddr())
}

// Validate checks the cluster config.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"gossip-port", c.GossipPort}, {"raft-port", c.RaftPort}, {"rpc-port", c.RPCPort}, {"http-port", c.HTTPPort}} {
		if p.v < 0 || p.v > 65535 {
			return fmt.Errorf("%w: --%s %d is not a port (0-65535)", ErrConfig, p.name, p.v)
		}
	}
	if c.BootstrapExpect < 0 {
		return fmt.Errorf("%w: --bootstrap-expect must be at least 1", ErrConfig)
	}
	if c.BootstrapExpect > 0 && !c.Server {
		return fmt.Errorf("%w: --bootstrap-expect needs --server", ErrConfig)
	}
	if c.Replica && c.Server {
		return fmt.Errorf("%w: --replica and --server exclude each other (a server votes; a replica does not)", ErrConfig)
	}
	if c.Replica && len(c.Join) == 0 {
		return fmt.Errorf("%w: --replica needs --join (a replica follows a mesh's servers)", ErrConfig)
	}
	if c.GossipKey != nil && len(c.GossipKey) != 32 {
		return fmt.Errorf("%w: the gossip key is %d bytes; it must be 32 (make one with `harn keygen`)", ErrConfig, len(c.GossipKey))
	}
	for _, j := range c.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			return fmt.Errorf("%w: --join %q: want host:port", ErrConfig, j)
		}
	}
	if _, err := mesh.ProfileConfig(c.MeshProfile); err != nil {
		return fmt.Errorf("%w: mesh profile %q: use lan or local", ErrConfig, c.MeshProfile)
	}
	if _, err := raftstore.ProfileConfig(c.RaftProfile); err != nil {
		return fmt.Errorf("%w: raft profile %q: use lan or fast", ErrConfig, c.RaftProfile)
	}
	if _, err := trust.ParseRemoteControl(c.RemoteControl); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, j := range c.JoinRPC {
		if _, _, err := net.SplitHostPort(j); err != nil {
			return fmt.Errorf("%w: --join-rpc %q: want host:port", ErrConfig, j)
		}
	}
	if c.MaxPeerReply < 0 || c.MaxPeerReply > 1<<30 {
		return fmt.Errorf("%w: --max-peer-reply-mib %d: use 1 to 1024", ErrConfig, c.MaxPeerReply>>20)
	}
	if c.ActivityFlush <= 0 || c.PresenceRefresh <= 0 {
		return fmt.Errorf("%w: activity flush and presence refresh must be positive", ErrConfig)
	}
	return nil
}

// GenerateGossipKey makes a fresh gossip key, base64-encoded.
func GenerateGossipKey() (string, error) {
	k, err := mesh.GenerateKey()
	if err != nil {
		return "", err
	}
	return mesh.EncodeKey(k), nil
}

// DecodeGossipKey decodes a base64 gossip key and checks its size.
func DecodeGossipKey(s string) ([]byte, error) { return mesh.DecodeKey(s) }
