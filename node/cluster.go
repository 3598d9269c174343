package node

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

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/forward"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/registry"
	"github.com/harn-dev/harn/node/tracing"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// Cluster errors.
var (
	ErrNoLeader = errors.New("node: the registry has no leader now; consistent reads and registry writes wait for one (retry, or read without --consistent)")
	ErrNoMesh   = errors.New("node: this node runs without the mesh")
	// ErrGossipKey means the mesh refused this node's gossip key.
	ErrGossipKey = errors.New("node: cannot join the mesh: gossip keys differ; pass the mesh's key with --gossip-key (or HARN_GOSSIP_KEY)")
	// ErrClosed means the node is shutting down.
	ErrClosed = errors.New("node: the node is closing")
)

// localNode is what the cluster needs of the node's local half: its live
// presence, its sessions and their events.
type localNode interface {
	liveEntries() []gossip.Entry
	localDigest() string
	Sessions(all bool) []presence.State
	resolveLocal(handle string) (presence.State, error)
	sessionEvents(id string) ([]presence.Event, error)
	diagnose(source, msg string, size int, digest string)
}

// cluster is the node's part in the mesh: gossip, the registry and its
// writer, the cluster gRPC service, and the loops that tie them together.
// It owns its goroutines (wg, stop); close stops them and releases what
// was opened, even when open failed half-way.
type cluster struct {
	cfg       ClusterConfig
	name      string
	clock     clock.Clock
	log       *slog.Logger
	local     localNode
	remote    *gossip.Table
	advertise string

	mesh   *mesh.Mesh
	store  *raftstore.Store
	rpcLis net.Listener
	rpcSrv *grpc.Server
	writer *registry.Writer
	pub    *gossip.Publisher
	fwd    forward.Path

	connMu    sync.Mutex
	conns     map[string]*grpc.ClientConn
	dialTrace []grpc.DialOption // tracing of calls to peers (none when off)

	kickReconcile chan struct{}
	meta          mesh.NodeMeta

	trust      *meshTrust // nil only with InsecureMesh (plaintext)
	keyringMu  sync.Mutex
	keyringIdx uint64 // registry index of the gossip keyring last applied

	// signer signs and checks presence gossip; nil without a CA
	// (--insecure-mesh, or a lone node on loopback).
	signer *gossipSigner

	pullMu    sync.Mutex
	pulling   map[string]bool
	unknownAt map[string]time.Time // last pull for an unknown signer, per origin
	pulls     atomic.Int64         // anti-entropy pulls made (tests, benchmarks)
	dropped   atomic.Int64         // presence blobs refused for their size (tests)

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// openCluster builds and starts the node's part in the mesh. On error the
// returned cluster (never nil) holds what was opened; close releases it.
func (n *Node) openCluster() (*cluster, error) {
	cc := n.cfg.Cluster
	c := &cluster{cfg: cc, name: n.cfg.Name, clock: n.cfg.Clock, log: n.log, local: n, remote: n.remote,
		conns: map[string]*grpc.ClientConn{}, pulling: map[string]bool{}, unknownAt: map[string]time.Time{}, kickReconcile: make(chan struct{}, 1),
		stop: make(chan struct{})}
	c.fwd = forward.Path{Timeout: cc.ForwardTimeout, Retry: 100 * time.Millisecond, Clock: c.clock,
		Stop: c.stop, NoLeader: ErrNoLeader, Stopped: ErrClosed}
	adv, err := cc.advertiseAddr()
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.advertise = adv
	bind := cc.bindAddr()
	ring, err := c.openTrust(n.cfg.DataDir)
	if err != nil {
		return c, err
	}

	// The cluster gRPC service.
	lis, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(cc.RPCPort)))
	if err != nil {
		return c, listenErr("rpc", "--rpc-port", bind, cc.RPCPort, err)
	}
	c.rpcLis = lis
	opts := append([]grpc.ServerOption{grpc.MaxRecvMsgSize(c.maxPeerReply())}, tracing.ServerOptions(n.cfg.TracerProvider)...)
	if c.trust != nil {
		opts = append(opts, c.serverOptions()...)
	}
	c.rpcSrv = grpc.NewServer(opts...)
	c.dialTrace = tracing.DialOptions(n.cfg.TracerProvider)
	apigrpc.RegisterClusterServer(c.rpcSrv, &clusterService{c: c})
	apigrpc.RegisterHostedPeerServer(c.rpcSrv, &hostedPeer{c: c})
	if c.trust != nil {
		c.startTrust(c.rpcSrv)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.rpcSrv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			c.log.Error("cluster rpc serve", "err", err)
		}
	}()
	rpcAddr := net.JoinHostPort(adv, strconv.Itoa(lis.Addr().(*net.TCPAddr).Port))

	// The registry.
	raftAddr, err := c.openStore(n.cfg.DataDir, bind)
	if err != nil {
		return c, err
	}

	// Gossip.
	mc, err := mesh.ProfileConfig(cc.MeshProfile)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	mc.Name = n.cfg.Name
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
	mc.PeersFile = filepath.Join(n.cfg.DataDir, "peers.json")
	mc.MaxStateSize = cc.MaxPresenceBytes
	if c.trust != nil && !cc.unsignedGossip {
		c.signer = newGossipSigner(c.trust.holder, c.trust.revs, c.clock)
		c.signer.onUnknown = c.pullUnknown
		mc.Signer = c.signer
	}
	role := mesh.RoleClient
	if cc.Voter() {
		role = mesh.RoleServer
	}
	httpAddr := ""
	if cc.HTTPPort > 0 {
		httpAddr = net.JoinHostPort(adv, strconv.Itoa(cc.HTTPPort))
	}
	mc.Meta = mesh.NodeMeta{Role: role, RaftAddr: raftAddr, RPCAddr: rpcAddr, HTTPAddr: httpAddr, Version: n.cfg.Version}
	c.meta = mc.Meta
	mc.Handler = n.gossipNotifier(&gossip.Handler{Self: c.name, Table: c.remote, Log: c.log, Local: c.localBlob,
		OnDigest: c.checkDigest, OnMember: c.memberEvent})
	mc.Logger = n.cfg.Logger.With("component", "mesh") // mesh adds the node name itself
	mc.Clock = c.clock
	m, err := mesh.New(mc)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.mesh = m
	c.pub = gossip.NewPublisher(c.clock, c.log, m)
	c.writer = registry.New(registry.Config{ActivityFlush: cc.ActivityFlush, WriteTimeout: cc.RegistrySyncTimeout,
		Clock: c.clock, Logger: c.log, Admit: c.store.Admit, OnRefused: c.writeRefused}, applierFunc(c.applyCommand))
	n.cl = c // before Start: member events arrive at once
	if err := m.Start(); err != nil {
		if isAddrInUse(err) {
			return c, listenErr("gossip", "--gossip-port", bind, cc.GossipPort, err)
		}
		return c, fmt.Errorf("gossip: %w", err)
	}
	// One join now, so that a wrong gossip key fails the start with an
	// error that says so; unreachable seeds are retried in the background.
	if len(cc.Join) > 0 {
		if _, err := m.Join(cc.Join); errors.Is(err, mesh.ErrKeyMismatch) {
			return c, fmt.Errorf("%w: %w", ErrGossipKey, err)
		} else if err != nil {
			c.log.Warn("join: no seed answered yet; retrying in the background", "join", cc.Join, "err", err)
		}
	}
	c.start(c.digestLoop, c.bootstrapLoop, c.reconcileLoop, func() { c.writer.Run(c.stop) }, c.refreshLoop, c.trustLoop, c.moveLoop)
	if c.trust != nil {
		c.trust.renewer.Start()
	}
	c.log.Info("mesh started", "gossip", m.LocalAddr(), "raft", raftAddr, "rpc", rpcAddr,
		"role", string(role), "join", cc.Join)
	return c, nil
}

// openStore opens the registry's Raft store and returns the address peers
// dial it at.
func (c *cluster) openStore(dataDir, bind string) (string, error) {
	cc := c.cfg
	rc, err := raftstore.ProfileConfig(cc.RaftProfile)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrConfig, err)
	}
	rc.ID = c.name
	rc.Dir = filepath.Join(dataDir, "raft")
	rc.BindAddr = net.JoinHostPort(bind, strconv.Itoa(cc.RaftPort))
	rc.AdvertiseAddr = ""
	if ip := net.ParseIP(bind); ip == nil || ip.IsUnspecified() || c.advertise != bind {
		rc.AdvertiseAddr = net.JoinHostPort(c.advertise, strconv.Itoa(cc.RaftPort))
	}
	rc.Voter = cc.Voter()
	if c.trust != nil {
		rc.TLS = c.raftTLS()
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
	c.store = store
	if err := store.Open(); err != nil {
		if isAddrInUse(err) {
			return "", listenErr("raft", "--raft-port", bind, cc.RaftPort, err)
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

// start runs each fn in a goroutine the cluster owns.
func (c *cluster) start(fns ...func()) {
	for _, fn := range fns {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			fn()
		}()
	}
}

// close leaves nothing running and closes the registry. It is safe on a
// partly built cluster and safe twice. A graceful leave is separate
// (Node.Leave).
func (c *cluster) close() {
	c.closeOnce.Do(func() {
		close(c.stop)
		if c.trust != nil && c.trust.renewer != nil {
			c.trust.renewer.Close()
		}
		if c.mesh != nil {
			c.mesh.Shutdown()
		}
		if c.rpcSrv != nil {
			stopGRPC(c.rpcSrv, clock.Real{}, 2*time.Second) // a bound on a stop is wall time
		} else if c.rpcLis != nil {
			c.rpcLis.Close()
		}
		c.wg.Wait()
		c.connMu.Lock()
		for _, cc := range c.conns {
			cc.Close()
		}
		c.conns = map[string]*grpc.ClientConn{}
		c.connMu.Unlock()
		if c.store != nil {
			if err := c.store.Close(); err != nil {
				c.log.Error("close registry", "err", err)
			}
		}
	})
}

// stopGRPC stops s gracefully, or at once after grace.
func stopGRPC(s *grpc.Server, clk clock.Clock, grace time.Duration) {
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
func (c *cluster) stopContext(parent context.Context) (context.Context, context.CancelFunc) {
	return stopContext(parent, c.stop)
}

// member returns the mesh member with name, if known.
func (c *cluster) member(name string) (mesh.Member, bool) {
	for _, m := range c.mesh.Members() {
		if m.Name == name {
			return m, true
		}
	}
	return mesh.Member{}, false
}

// peerConn returns a (cached) client connection to a node's rpc address;
// with trust on, over mutual TLS that expects the node's certificate.
func (c *cluster) peerConn(name, addr string) (*grpc.ClientConn, error) {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	key := name + "\x00" + addr
	if cc, ok := c.conns[key]; ok {
		return cc, nil
	}
	creds := insecure.NewCredentials()
	if c.trust != nil {
		creds = c.clientCreds(name)
	}
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 3 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(c.maxPeerReply()))}, c.dialTrace...)...)
	if err != nil {
		return nil, err
	}
	c.conns[key] = cc
	return cc, nil
}

// maxPeerReply is the bound of one cluster gRPC message, either way.
func (c *cluster) maxPeerReply() int {
	if c.cfg.MaxPeerReply > 0 {
		return c.cfg.MaxPeerReply
	}
	return DefaultMaxPeerReply
}

// ErrPeerReply: a peer's reply was over a bound (a *PeerReplyError).
var ErrPeerReply = errors.New("node: a peer's reply is over its bound")

// PeerReplyError is a peer's reply whose list holds more than
// MaxPeerListItems entries.
type PeerReplyError struct {
	// Peer says whose reply it is ("node b", "the owner of session s").
	Peer, What string
	N          int
}

func (e *PeerReplyError) Error() string {
	return fmt.Sprintf("node: the reply of %s holds %d %s, more than %d; refused", e.Peer, e.N, e.What, MaxPeerListItems)
}

// Unwrap makes a PeerReplyError match ErrPeerReply.
func (e *PeerReplyError) Unwrap() error { return ErrPeerReply }

// checkPeerList refuses a peer's list longer than MaxPeerListItems.
func checkPeerList(peer, what string, n int) error {
	if n > MaxPeerListItems {
		return &PeerReplyError{Peer: peer, What: what, N: n}
	}
	return nil
}

// clusterClientOf returns a Cluster client for the named node.
func (c *cluster) clusterClientOf(name string) (apigrpc.ClusterClient, error) {
	m, ok := c.member(name)
	if !ok || m.Meta.RPCAddr == "" {
		return nil, fmt.Errorf("node: %q is not a known mesh member", name)
	}
	cc, err := c.peerConn(name, m.Meta.RPCAddr)
	if err != nil {
		return nil, err
	}
	return apigrpc.NewClusterClient(cc), nil
}

// applierFunc adapts a func to registry.Applier.
type applierFunc func(ctx context.Context, cmd raftstore.Command) (uint64, error)

func (f applierFunc) Apply(ctx context.Context, cmd raftstore.Command) (uint64, error) {
	return f(ctx, cmd)
}

// elsewhere turns the store's "not the leader" errors into the forwarding
// path's "look elsewhere": a named leader, or none known yet (also when
// leadership was lost mid-write: an upsert is safe to repeat).
func elsewhere(err error) error {
	var nl *raftstore.NotLeaderError
	if errors.As(err, &nl) {
		return &forward.ElsewhereError{Leader: nl.LeaderID, Err: err}
	}
	if errors.Is(err, raftstore.ErrNotLeader) {
		return &forward.ElsewhereError{Err: err}
	}
	return err
}

// applyCommand applies a registry command on the leader: here when this
// node leads, else forwarded over the cluster gRPC.
func (c *cluster) applyCommand(ctx context.Context, cmd raftstore.Command) (uint64, error) {
	var idx uint64
	// A refusal at the leader is final: stop the retries with it.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var final error
	err := c.fwd.Do(ctx, func() error {
		var err error
		idx, err = c.store.Apply(ctx, cmd)
		return elsewhere(err)
	}, func(fctx context.Context, leader string) error {
		cl, err := c.clusterClientOf(leader)
		if err != nil {
			return err
		}
		b, err := raftstore.EncodeCommand(cmd)
		if err != nil {
			return err
		}
		res, err := cl.Apply(fctx, &api.ApplyRequest{Command: b})
		if err == nil {
			idx = res.Index
		}
		if f := finalApplyErr(err); f != nil {
			final = f
			stop()
		}
		return err
	})
	if final != nil {
		return 0, final
	}
	return idx, err
}

// removeServer removes a server from the Raft configuration on the leader.
func (c *cluster) removeServer(ctx context.Context, id string) error {
	return c.fwd.Do(ctx, func() error {
		return elsewhere(c.store.RemoveServer(id))
	}, func(fctx context.Context, leader string) error {
		cl, err := c.clusterClientOf(leader)
		if err != nil {
			return err
		}
		_, err = cl.RemoveServer(fctx, &api.RemoveServerRequest{Id: id})
		return err
	})
}

// publish tells the mesh about a session's change: a gossip delta when its
// presence hash changed, and the registry writer in any case (it decides
// what the registry needs).
func (c *cluster) publish(p published) {
	c.writer.Observe(p.state)
	if p.changed {
		c.pub.Publish(&p.state, p.hash)
	}
}

// localBlob is this node's full presence for push/pull: its live
// sessions. A receiver drops what the blob no longer lists.
func (c *cluster) localBlob() gossip.Blob {
	return c.pub.Blob(c.name, c.local.liveEntries())
}

// PresenceEntry is what a node gossips about one of its sessions.
type PresenceEntry = gossip.Entry
