package mesh

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/harn-dev/harn/util/clock"
)

// Profiles name the memberlist base configuration that the fields a Config
// does not expose (indirect checks, awareness, UDP buffer size, …) come from.
const (
	ProfileLAN   Profile = "lan"   // memberlist.DefaultLANConfig: machines on one network
	ProfileLocal Profile = "local" // memberlist.DefaultLocalConfig: one machine, loopback
)

// DefaultPort is the port a harn node binds for gossip when none is given.
// It is one above serf's 7946, so that a Consul or Nomad agent on the same
// machine does not collide with harn.
const DefaultPort = 7947

// Config configures a Mesh. Build it with DefaultConfig or TestConfig and
// change fields; New validates it.
type Config struct {
	// Name is the node's unique name in the mesh (harn: the hostname). A node
	// that restarts, even at another address, keeps its name.
	Name string
	// BindAddr and BindPort are where gossip listens (UDP and TCP on the same
	// port). Port 0 picks a free port.
	BindAddr string
	BindPort int
	// AdvertiseAddr and AdvertisePort are what other nodes are told to use;
	// empty and 0 mean "the bind address".
	AdvertiseAddr string
	AdvertisePort int
	// Join lists seeds, "host:port". Start joins them (plus PeersFile) in
	// the background until one answers.
	Join []string
	// SecretKey encrypts and authenticates all gossip: nil is plaintext,
	// else 16, 24 or 32 bytes (harn uses 32; see GenerateKey). Every node of
	// a mesh needs the same key.
	SecretKey []byte
	// ExtraKeys are further gossip keys accepted for decryption (a key
	// rotation in progress); SecretKey stays the one gossip is sent with.
	ExtraKeys [][]byte
	// Meta is this node's metadata, visible to all members.
	Meta NodeMeta
	// PeersFile is where the addresses of the last known alive peers are
	// kept, so that a restarted node rejoins by itself; "" keeps none.
	PeersFile string
	// Profile is ProfileLAN or ProfileLocal.
	Profile Profile

	// RetransmitMult scales how many times each node gossips a delta; 0
	// scales it to the mesh size (see scaledRetransmitMult).
	RetransmitMult int
	// DirectSendMax: meshes of up to this many alive members also get a
	// reliable direct send of each delta to every other member; 0 disables.
	DirectSendMax int
	// DirectSendWorkers is the size of the worker pool doing direct sends.
	DirectSendWorkers int
	// DirectSendQueue bounds the sends waiting for a worker; beyond it a
	// direct send is dropped (gossip still carries the delta).
	DirectSendQueue int
	// MaxQueueDepth bounds the gossip queue; older entries are pruned.
	MaxQueueDepth int

	// DeadNodeReclaimTime is how long after a node was declared dead its
	// name may be taken by a node at another address (a machine whose
	// address changed).
	DeadNodeReclaimTime time.Duration

	// memberlist timers. Zero takes the Profile's value.
	ProbeInterval    time.Duration
	ProbeTimeout     time.Duration
	SuspicionMult    int
	GossipInterval   time.Duration
	GossipNodes      int
	PushPullInterval time.Duration
	TCPTimeout       time.Duration

	// JoinBackoffMin and JoinBackoffMax bound the delay between background
	// join attempts while this node is alone.
	JoinBackoffMin time.Duration
	JoinBackoffMax time.Duration
	// ReconnectInterval is how often one failed member is tried again, so
	// that a healed partition or a woken machine merges back.
	ReconnectInterval time.Duration
	// PersistDelay debounces writes of PeersFile after membership changes.
	PersistDelay time.Duration
	// DepartedRetention is how long a dead or left member stays listed in
	// Members; 0 keeps it for the life of the process.
	DepartedRetention time.Duration
	// SeenRetention is how long the last version of a key is remembered to
	// drop duplicate deliveries and to decide whether to re-gossip.
	SeenRetention time.Duration

	// Signer signs this node's deltas and push/pull state and checks the
	// others'; nil sends unsigned frames and delivers every frame (a mesh
	// without a CA). See Signer.
	Signer Signer
	// MaxStateSize bounds a peer's push/pull state; a larger one is dropped
	// and counted (Drops.TooLarge). 0 means DefaultMaxStateSize.
	MaxStateSize int

	// Handler receives deltas, full state and member events. Required.
	Handler Handler
	// Logger receives mesh's logs; memberlist's own go to it at debug level.
	Logger *slog.Logger
	// Clock stamps Member.Since and the times mesh keeps (dead, claim,
	// intent and seen stamps, and their expiry), and times mesh's own
	// loops: joins and their backoff, reconnects, claims, pruning and the
	// debounced peers file. memberlist's timers and LeaveWithin's bound
	// (a bound on real network sends) stay on real time.
	Clock clock.Clock
	// Transport replaces memberlist's UDP/TCP transport (tests pass a
	// MemNetwork transport); nil is the real network.
	Transport memberlist.NodeAwareTransport
}

// DefaultMaxStateSize is the default bound of a peer's push/pull state
// (memberlist's own is 20 MiB).
const DefaultMaxStateSize = 16 << 20

// DefaultConfig is the configuration of a harn node on a LAN: memberlist's
// LAN timers, direct sends in meshes of up to 32 members.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return Config{
		Name:                host,
		BindAddr:            "0.0.0.0",
		BindPort:            DefaultPort,
		Profile:             ProfileLAN,
		DirectSendMax:       32,
		DirectSendWorkers:   4,
		DirectSendQueue:     1024,
		MaxQueueDepth:       4096,
		DeadNodeReclaimTime: 10 * time.Second,
		ProbeInterval:       time.Second,
		ProbeTimeout:        500 * time.Millisecond,
		SuspicionMult:       4,
		GossipInterval:      200 * time.Millisecond,
		GossipNodes:         3,
		PushPullInterval:    30 * time.Second,
		TCPTimeout:          10 * time.Second,
		JoinBackoffMin:      time.Second,
		JoinBackoffMax:      30 * time.Second,
		ReconnectInterval:   30 * time.Second,
		PersistDelay:        2 * time.Second,
		DepartedRetention:   24 * time.Hour,
		SeenRetention:       2 * time.Minute,
		MaxStateSize:        DefaultMaxStateSize,
		Logger:              slog.Default(),
		Clock:               clock.Real{},
	}
}

// Profile names a memberlist base configuration and the timers that go
// with it.
type Profile string

// ProfileConfig is the configuration of a profile: DefaultConfig for
// ProfileLAN (or ""), localConfig's millisecond timers for ProfileLocal.
func ProfileConfig(p Profile) (Config, error) {
	switch p {
	case ProfileLAN, "":
		return DefaultConfig(), nil
	case ProfileLocal:
		return localConfig(), nil
	}
	return Config{}, fmt.Errorf("%w: profile %q is unknown; use %q or %q", ErrConfig, p, ProfileLAN, ProfileLocal)
}

// TestConfig is the ProfileLocal configuration (tests).
func TestConfig() Config { return localConfig() }

// localConfig is DefaultConfig with timers in milliseconds, bound to a free
// port on loopback, logging nowhere: a mesh of a few nodes converges, detects
// a failure and reclaims a name within about a second.
func localConfig() Config {
	c := DefaultConfig()
	c.Name = "test"
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.Profile = ProfileLocal
	c.DeadNodeReclaimTime = 100 * time.Millisecond
	c.ProbeInterval = 100 * time.Millisecond
	c.ProbeTimeout = 50 * time.Millisecond
	c.SuspicionMult = 3
	c.GossipInterval = 20 * time.Millisecond
	c.PushPullInterval = 300 * time.Millisecond
	c.TCPTimeout = 500 * time.Millisecond
	c.JoinBackoffMin = 20 * time.Millisecond
	c.JoinBackoffMax = 300 * time.Millisecond
	c.ReconnectInterval = 200 * time.Millisecond
	c.PersistDelay = 20 * time.Millisecond
	c.SeenRetention = 10 * time.Second
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return c
}

// Validate reports the first bad field, wrapping ErrConfig, with the fix.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case c.Name == "":
		return bad("Name is empty; give the node a unique name (harn uses the hostname)")
	case c.BindPort < 0 || c.BindPort > 65535:
		return bad("BindPort %d is out of range; use 0..65535 (0 picks a free port)", c.BindPort)
	case c.AdvertisePort < 0 || c.AdvertisePort > 65535:
		return bad("AdvertisePort %d is out of range; use 0..65535", c.AdvertisePort)
	case c.BindAddr != "" && net.ParseIP(c.BindAddr) == nil:
		return bad("BindAddr %q is not an IP address; use e.g. 0.0.0.0 or 127.0.0.1", c.BindAddr)
	case c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil:
		return bad("AdvertiseAddr %q is not an IP address", c.AdvertiseAddr)
	case len(c.SecretKey) != 0 && len(c.SecretKey) != 16 && len(c.SecretKey) != 24 && len(c.SecretKey) != 32:
		return bad("SecretKey is %d bytes; use 32 (see GenerateKey), or none for plaintext", len(c.SecretKey))
	case c.Profile != "" && c.Profile != ProfileLAN && c.Profile != ProfileLocal:
		return bad("Profile %q is unknown; use %q or %q", c.Profile, ProfileLAN, ProfileLocal)
	case c.MaxStateSize < 0:
		return bad("MaxStateSize %d is negative; use a byte count (0 takes %d)", c.MaxStateSize, DefaultMaxStateSize)
	case c.RetransmitMult < 0 || c.DirectSendMax < 0 || c.DirectSendWorkers < 0 || c.DirectSendQueue < 0 || c.MaxQueueDepth < 0:
		return bad("RetransmitMult, DirectSendMax, DirectSendWorkers, DirectSendQueue and MaxQueueDepth must not be negative")
	case c.DirectSendMax > 0 && c.DirectSendWorkers == 0:
		return bad("DirectSendWorkers is 0 while DirectSendMax is %d; set DirectSendWorkers or set DirectSendMax to 0", c.DirectSendMax)
	case c.SuspicionMult < 0 || c.GossipNodes < 0:
		return bad("SuspicionMult and GossipNodes must not be negative")
	case c.DeadNodeReclaimTime < 0 || c.ProbeInterval < 0 || c.ProbeTimeout < 0 || c.GossipInterval < 0 ||
		c.PushPullInterval < 0 || c.TCPTimeout < 0 || c.JoinBackoffMin < 0 || c.JoinBackoffMax < 0 ||
		c.ReconnectInterval < 0 || c.PersistDelay < 0 || c.DepartedRetention < 0 || c.SeenRetention < 0:
		return bad("durations must not be negative")
	case c.JoinBackoffMin == 0 || c.JoinBackoffMax < c.JoinBackoffMin:
		return bad("JoinBackoffMin must be > 0 and JoinBackoffMax >= JoinBackoffMin (got %v, %v)", c.JoinBackoffMin, c.JoinBackoffMax)
	case c.Handler == nil:
		return bad("Handler is nil; the node must receive deltas and state")
	case c.Logger == nil || c.Clock == nil:
		return bad("Logger and Clock are required (start from DefaultConfig)")
	}
	if err := c.Meta.validate(); err != nil {
		return err
	}
	if n := len(c.Meta.encode(0)); n > memberlist.MetaMaxSize {
		return bad("Meta encodes to %d bytes, over memberlist's %d; shorten the addresses or version", n, memberlist.MetaMaxSize)
	}
	return nil
}

// memberlistConfig builds memberlist's configuration: the Profile's base,
// then every field this Config sets.
func (c Config) memberlistConfig() *memberlist.Config {
	var mc *memberlist.Config
	if c.Profile == ProfileLocal {
		mc = memberlist.DefaultLocalConfig()
	} else {
		mc = memberlist.DefaultLANConfig()
	}
	mc.Name = c.Name
	if c.BindAddr != "" {
		mc.BindAddr = c.BindAddr
	}
	mc.BindPort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = c.AdvertisePort
	if c.AdvertisePort == 0 {
		mc.AdvertisePort = c.BindPort
	}
	setDur := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	setInt := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	setDur(&mc.ProbeInterval, c.ProbeInterval)
	setDur(&mc.ProbeTimeout, c.ProbeTimeout)
	setInt(&mc.SuspicionMult, c.SuspicionMult)
	setDur(&mc.GossipInterval, c.GossipInterval)
	setInt(&mc.GossipNodes, c.GossipNodes)
	setDur(&mc.PushPullInterval, c.PushPullInterval)
	setDur(&mc.TCPTimeout, c.TCPTimeout)
	// memberlist ties both to the push/pull period in its own profiles.
	mc.GossipToTheDeadTime = mc.PushPullInterval
	mc.DeadNodeReclaimTime = c.DeadNodeReclaimTime
	if len(c.SecretKey) > 0 {
		mc.SecretKey = append([]byte(nil), c.SecretKey...)
	}
	if c.Transport != nil {
		mc.Transport = c.Transport
		if t, ok := c.Transport.(*MemTransport); ok && t.net.lzw.Load() {
			mc.EnableCompression = false // the network counts its bytes (MemNetwork.EmulateCompression)
		}
	}
	return mc
}
