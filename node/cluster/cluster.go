package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/forward"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/registry"
	"github.com/harn-dev/harn/node/tracing"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// Cluster errors.
var (
	// ErrNoMesh: the node runs without the mesh.
	ErrNoMesh   = errors.New("node: this node runs without the mesh")
	ErrNoLeader = errors.New("node: the registry has no leader now; consistent reads and registry writes wait for one (retry, or read without --consistent)")
	// ErrGossipKey means the mesh refused this node's gossip key.
	ErrGossipKey = errors.New("node: cannot join the mesh: gossip keys differ; pass the mesh's key with --gossip-key (or HARN_GOSSIP_KEY)")
	// ErrClosed means the node is shutting down.
	ErrClosed = meshtrust.ErrClosed
)

// Local is what the cluster asks of the node's local half: its live
// presence, its sessions, a diagnostic line, and the registry's switches
// applied to its task runtimes.
type Local interface {
	LiveEntries() []gossip.Entry
	LocalDigest() string
	Sessions(all bool) []presence.State
	Diagnose(source, msg string)
	ApplySwitches(all map[string]meshtrust.Switch)
}

// Deps are what the node hands the cluster: its local half, the calls of
// the cluster gRPC about its own sessions and tasks, the table peers'
// presence goes into, and the wrappers of the gossip handler.
type Deps struct {
	Name     string
	DataDir  string
	Version  string
	Clock    clock.Clock
	Logger   *slog.Logger // the node's, with its name
	Root     *slog.Logger // the process's (mesh adds the node name itself)
	Local    Local
	Peer     PeerService
	Remote   *gossip.Table
	Tracer   trace.TracerProvider // nil: no tracing
	Notifier func(*gossip.Handler) mesh.Handler
	// Decorate adds to each gossiped entry what the node knows beside
	// the session (its harn task); nil adds nothing.
	Decorate func(*gossip.Entry)
	// Register adds the node's other services to the cluster gRPC
	// server before it serves (nil: none).
	Register func(*grpc.Server)
}

// replica is the registry this node reads: the raft store's replica on a
// server or read replica, the watch's mirror on every other node.
type replica interface {
	Get(id string) (raftstore.Record, bool)
	List() []raftstore.Record
	Records() []raftstore.Record
	KVGet(key string) (raftstore.KVEntry, bool)
	KVList(prefix string) []raftstore.KVEntry
	KVIndex() uint64
	ClaimOf(repo, path string) (raftstore.Claim, bool)
	ClaimsOf(session string) []raftstore.Claim
	Claims() []raftstore.Claim
	NotifyHooks() ([]raftstore.NotifyHook, uint64)
	Admit(node string, ids []string) map[string]error
	SessionQuota() int
	LiveSessions(node string) int
	Staleness() raftstore.ReadInfo
	WaitForApplied(ctx context.Context, index uint64) error
	WaitForLeader(ctx context.Context) error
	Leader() (id, addr string)
	IsLeader() bool
}

// Cluster is the node's part in the mesh: gossip, the registry and its
// writer, the cluster gRPC service, and the loops that tie them together.
// It owns its goroutines (wg, stop); Close stops them and releases what
// was opened, even when Open failed half-way.
type Cluster struct {
	cfg       Config
	name      string
	clock     clock.Clock
	log       *slog.Logger
	deps      Deps
	local     Local
	remote    *gossip.Table
	advertise string

	mesh   *mesh.Mesh
	store  *raftstore.Store  // servers and read replicas; nil elsewhere
	mirror *raftstore.Mirror // every other node: the registry from a watch
	reg    replica           // store or mirror
	rpcLis net.Listener
	rpcSrv *grpc.Server
	writer *registry.Writer
	pub    *gossip.Publisher
	fwd    forward.Path
	conns  *peerConns

	meta  mesh.NodeMeta
	trust *meshtrust.Trust // nil only with InsecureMesh (plaintext)
	// signer signs and checks presence gossip; nil without a CA
	// (--insecure-mesh, or a lone node on loopback).
	signer   *meshtrust.Signer
	presence *presenceSync
	members  *membership
	keyring  keyringSync

	// progressCache is the watches' shared progress report (watch.go).
	progressCache progressCache

	// follows counts the follower's passes over the registry's settings
	// (tests: an idle node makes none).
	follows atomic.Int64

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New builds a cluster. It does no I/O; Open starts it.
func New(cfg Config, deps Deps) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Root == nil {
		deps.Root = deps.Logger
	}
	if deps.Peer == nil {
		deps.Peer = noPeer{}
	}
	if deps.Remote == nil {
		deps.Remote = gossip.NewTable()
	}
	c := &Cluster{cfg: cfg, name: deps.Name, clock: deps.Clock, log: deps.Logger, deps: deps, local: deps.Local,
		remote: deps.Remote, stop: make(chan struct{})}
	c.fwd = forward.Path{Timeout: cfg.ForwardTimeout, Retry: 100 * time.Millisecond, Clock: c.clock,
		Stop: c.stop, NoLeader: ErrNoLeader, Stopped: ErrClosed}
	c.presence = newPresenceSync(c)
	c.members = &membership{c: c, kick: make(chan struct{}, 1)}
	c.keyring.c = c
	return c, nil
}

// Open starts the node's part in the mesh. On error what was opened stays
// for Close to release.
func (c *Cluster) Open() error {
	cc := c.cfg
	adv, err := cc.advertiseAddr()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.advertise = adv
	bind := cc.BindAddr()
	t, ring, err := meshtrust.Open(meshtrust.Config{Name: c.name, DataDir: c.deps.DataDir, Server: cc.Server,
		Join: cc.Join, JoinRPC: cc.JoinRPC, JoinToken: cc.JoinToken, InsecureMesh: cc.InsecureMesh,
		GossipKey: cc.GossipKey, RegistryTimeout: cc.RegistrySyncTimeout, ForwardTimeout: cc.ForwardTimeout,
		Clock: c.clock, Logger: c.log})
	if err != nil {
		return err
	}
	c.trust = t
	c.conns = &peerConns{c: c, conns: map[string]*grpc.ClientConn{}}

	// The cluster gRPC service.
	lis, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(cc.RPCPort)))
	if err != nil {
		return layout.ListenErr("rpc", "--rpc-port", bind, cc.RPCPort, err)
	}
	c.rpcLis = lis
	opts := append([]grpc.ServerOption{grpc.MaxRecvMsgSize(c.cfg.MaxPeerReply)}, tracing.ServerOptions(c.deps.Tracer)...)
	if c.trust != nil {
		opts = append(opts, c.trust.ServerOptions()...)
	}
	c.rpcSrv = grpc.NewServer(opts...)
	c.conns.trace = tracing.DialOptions(c.deps.Tracer)
	apigrpc.RegisterClusterServer(c.rpcSrv, &service{c: c, peer: c.deps.Peer})
	if c.deps.Register != nil {
		c.deps.Register(c.rpcSrv)
	}
	if c.trust != nil {
		c.trust.Attach(trustHost{c}, c.rpcSrv)
	}
	rpcAddr := net.JoinHostPort(adv, strconv.Itoa(lis.Addr().(*net.TCPAddr).Port))

	// The registry, before the service answers: its calls read it. A
	// server or replica holds its raft log; every other node follows a
	// server's watch into a mirror.
	raftAddr := ""
	if cc.RaftMember() {
		if raftAddr, err = c.openStore(bind); err != nil {
			return err
		}
	} else {
		c.mirror = raftstore.NewMirror(raftstore.MirrorConfig{StaleAfter: 3 * cc.WatchProgress, Clock: c.clock,
			File: filepath.Join(c.deps.DataDir, registryViewFile)})
		c.reg = c.mirror
	}
	c.start(func() {
		if err := c.rpcSrv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			c.log.Error("cluster rpc serve", "err", err)
		}
	})

	// Gossip.
	mc, err := mesh.ProfileConfig(cc.MeshProfile)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	mc.Name = c.name
	mc.BindAddr, mc.BindPort = bind, cc.GossipPort
	mc.AdvertiseAddr = adv
	mc.Join = cc.Join
	mc.SecretKey = cc.GossipKey
	if ring != nil {
		mc.SecretKey = ring.Primary
		for _, k := range ring.Keys {
			if string(k) != string(ring.Primary) {
				mc.ExtraKeys = append(mc.ExtraKeys, k)
			}
		}
	}
	mc.PeersFile = filepath.Join(c.deps.DataDir, "peers.json")
	mc.MaxStateSize = cc.MaxPresenceBytes
	if c.trust != nil && !cc.UnsignedGossip {
		c.signer = meshtrust.NewSigner(c.trust.Holder(), c.trust.Revocations(), c.clock)
		c.signer.OnUnknown = c.presence.pullUnknown
		mc.Signer = c.signer
	}
	role := mesh.RoleClient
	switch {
	case cc.Voter():
		role = mesh.RoleServer
	case cc.Replica:
		role = mesh.RoleReplica
	}
	httpAddr := ""
	if cc.HTTPPort > 0 {
		httpAddr = net.JoinHostPort(adv, strconv.Itoa(cc.HTTPPort))
	}
	mc.Meta = mesh.NodeMeta{Role: role, RaftAddr: raftAddr, RPCAddr: rpcAddr, HTTPAddr: httpAddr, Version: c.deps.Version}
	c.meta = mc.Meta
	var h mesh.Handler = &gossip.Handler{Self: c.name, Table: c.remote, Log: c.log, Local: c.localBlob,
		OnDigest: c.presence.checkDigest, OnMember: c.members.memberEvent}
	if c.deps.Notifier != nil {
		h = c.deps.Notifier(h.(*gossip.Handler))
	}
	mc.Handler = h
	mc.Logger = c.deps.Root.With("component", "mesh")
	mc.Clock = c.clock
	m, err := mesh.New(mc)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.mesh = m
	c.pub = gossip.NewPublisher(c.clock, c.log, m)
	if c.deps.Decorate != nil {
		c.pub.SetDecorate(c.deps.Decorate)
	}
	c.writer = registry.New(registry.Config{ActivityFlush: cc.ActivityFlush, WriteTimeout: cc.RegistrySyncTimeout,
		Clock: c.clock, Logger: c.log, Admit: c.reg.Admit, OnRefused: c.writeRefused}, applierFunc(c.Apply))
	if err := m.Start(); err != nil {
		if layout.IsAddrInUse(err) {
			return layout.ListenErr("gossip", "--gossip-port", bind, cc.GossipPort, err)
		}
		return fmt.Errorf("gossip: %w", err)
	}
	// One join now, so that a wrong gossip key fails the start with an
	// error that says so; unreachable seeds are retried in the background.
	if len(cc.Join) > 0 {
		if _, err := m.Join(cc.Join); errors.Is(err, mesh.ErrKeyMismatch) {
			return fmt.Errorf("%w: %w", ErrGossipKey, err)
		} else if err != nil {
			c.log.Warn("join: no seed answered yet; retrying in the background", "join", cc.Join, "err", err)
		}
	}
	c.start(c.presence.digestLoop, func() { c.writer.Run(c.stop) }, c.refreshLoop, follower{c}.loop)
	if c.store != nil {
		c.start(c.members.bootstrapLoop, c.members.reconcileLoop, c.members.moveLoop)
	} else {
		c.start((&watcher{c: c, mirror: c.mirror, told: map[string]bool{}}).run)
	}
	if c.trust != nil {
		c.trust.Start()
	}
	c.log.Info("mesh started", "gossip", m.LocalAddr(), "raft", raftAddr, "rpc", rpcAddr,
		"role", string(role), "join", cc.Join)
	return nil
}

// openStore opens the registry's Raft store and returns the address peers
// dial it at.
func (c *Cluster) openStore(bind string) (string, error) {
	cc := c.cfg
	rc, err := raftstore.ProfileConfig(cc.RaftProfile)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrConfig, err)
	}
	rc.ID = c.name
	rc.Dir = filepath.Join(c.deps.DataDir, "raft")
	rc.BindAddr = net.JoinHostPort(bind, strconv.Itoa(cc.RaftPort))
	rc.AdvertiseAddr = ""
	if ip := net.ParseIP(bind); ip == nil || ip.IsUnspecified() || c.advertise != bind {
		rc.AdvertiseAddr = net.JoinHostPort(c.advertise, strconv.Itoa(cc.RaftPort))
	}
	rc.Voter = cc.Voter()
	rc.PrivateKV = privateKV
	if c.trust != nil {
		rc.TLS = c.trust.RaftTLS()
	}
	rc.Clock = c.clock
	rc.Logger = slog.New(newRepeatFilter(c.log.With("component", "raft").Handler(), c.clock, raftRepeatWindow))
	if cc.RaftPort == 0 && rc.AdvertiseAddr != "" {
		rc.AdvertiseAddr = "" // resolved after bind below
	}
	store, err := raftstore.New(rc)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.store, c.reg = store, store
	if err := store.Open(); err != nil {
		if layout.IsAddrInUse(err) {
			return "", layout.ListenErr("raft", "--raft-port", bind, cc.RaftPort, err)
		}
		return "", fmt.Errorf("open registry: %w", err)
	}
	raftAddr := store.Addr()
	if h, p, err := net.SplitHostPort(raftAddr); err == nil {
		if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
			raftAddr = net.JoinHostPort(c.advertise, p)
		}
	}
	return raftAddr, nil
}

// registryViewFile keeps a watching node's last view of the registry
// across restarts (the data dir is private).
const registryViewFile = "registry-view"

// start runs each fn in a goroutine the cluster owns.
func (c *Cluster) start(fns ...func()) {
	for _, fn := range fns {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			fn()
		}()
	}
}

// Close leaves nothing running and closes the registry. It is safe on a
// partly built cluster and safe twice. A graceful leave is separate
// (LeaveMesh).
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		close(c.stop)
		c.trust.Close()
		if c.mesh != nil {
			c.mesh.Shutdown()
		}
		if c.rpcSrv != nil {
			StopGRPC(c.rpcSrv, clock.Real{}, 2*time.Second) // a bound on a stop is wall time
		} else if c.rpcLis != nil {
			c.rpcLis.Close()
		}
		c.wg.Wait()
		if c.conns != nil {
			c.conns.closeAll()
		}
		if c.store != nil {
			if err := c.store.Close(); err != nil {
				c.log.Error("close registry", "err", err)
			}
		}
		if c.mirror != nil {
			if err := c.mirror.Close(); err != nil {
				c.log.Error("save the registry view", "err", err)
			}
		}
	})
}

// StopGRPC stops s gracefully, or at once after grace.
func StopGRPC(s *grpc.Server, clk clock.Clock, grace time.Duration) {
	done := make(chan struct{})
	go func() { s.GracefulStop(); close(done) }()
	t := clk.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		s.Stop()
		<-done
	}
}

// stopContext returns a context that ends when the cluster stops (or
// cancel is called). Its watcher goroutine ends with it.
func (c *Cluster) stopContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// applierFunc adapts a func to registry.Applier.
type applierFunc func(ctx context.Context, cmd raftstore.Command) (uint64, error)

func (f applierFunc) Apply(ctx context.Context, cmd raftstore.Command) (uint64, error) {
	return f(ctx, cmd)
}

// localBlob is this node's full presence for push/pull: its live
// sessions. A receiver drops what the blob no longer lists.
func (c *Cluster) localBlob() gossip.Blob {
	return c.pub.Blob(c.name, c.local.LiveEntries())
}

// trustHost is the cluster as the trust room sees it.
type trustHost struct{ c *Cluster }

var _ meshtrust.Host = trustHost{}

func (h trustHost) Apply(ctx context.Context, cmd raftstore.Command) (uint64, error) {
	return h.c.Apply(ctx, cmd)
}
func (h trustHost) KVGet(key string) (raftstore.KVEntry, bool) { return h.c.reg.KVGet(key) }
func (h trustHost) KVList(prefix string) []raftstore.KVEntry   { return h.c.reg.KVList(prefix) }
func (h trustHost) LeaderKnown() bool                          { id, _ := h.c.reg.Leader(); return id != "" }
func (h trustHost) Members() []mesh.Member {
	if h.c.mesh == nil {
		return nil
	}
	return h.c.mesh.Members()
}
func (h trustHost) DropConns() { h.c.conns.dropAll() }
func (h trustHost) WaitForApplied(ctx context.Context, index uint64) error {
	return h.c.reg.WaitForApplied(ctx, index)
}
