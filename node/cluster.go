package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/raftstore"
)

// Cluster errors.
var (
	ErrNoLeader = errors.New("the registry has no leader now; consistent reads and registry writes wait for one (retry, or read without --consistent)")
	ErrNoMesh   = errors.New("this node runs without the mesh")
	// ErrGossipKey means the mesh refused this node's gossip key.
	ErrGossipKey = errors.New("cannot join the mesh: gossip keys differ; pass the mesh's key with --gossip-key (or HARN_GOSSIP_KEY)")
)

// cluster is the node's part in the mesh: gossip, the registry, the
// cluster gRPC service and the loops that tie them together.
type cluster struct {
	n         *Node
	cfg       ClusterConfig
	advertise string

	mesh   *mesh.Mesh
	store  *raftstore.Store
	rpcLis net.Listener
	rpcSrv *grpc.Server
	writer *registryWriter

	connMu sync.Mutex
	conns  map[string]*grpc.ClientConn

	verMu   sync.Mutex
	lastVer uint64
	sentMu  sync.Mutex
	sent    map[string]string // session -> last broadcast hash
	sentVer map[string]uint64 // session -> last broadcast version

	kickReconcile chan struct{}
	meta          mesh.NodeMeta

	pullMu  sync.Mutex
	pulling map[string]bool
	pulls   atomic.Int64 // anti-entropy pulls made (tests, benchmarks)
}

func (n *Node) openCluster() error {
	cc := n.cfg.Cluster
	adv, err := cc.advertiseAddr()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c := &cluster{n: n, cfg: cc, advertise: adv, conns: map[string]*grpc.ClientConn{},
		sent: map[string]string{}, sentVer: map[string]uint64{}, pulling: map[string]bool{}, kickReconcile: make(chan struct{}, 1)}
	bind := cc.bindAddr()

	// The cluster gRPC service.
	lis, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(cc.RPCPort)))
	if err != nil {
		return fmt.Errorf("rpc listen: %w", err)
	}
	c.rpcLis = lis
	c.rpcSrv = grpc.NewServer(grpc.MaxRecvMsgSize(16 << 20))
	api.RegisterClusterServer(c.rpcSrv, &clusterService{c: c})
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := c.rpcSrv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			n.log.Error("cluster rpc serve", "err", err)
		}
	}()
	rpcAddr := net.JoinHostPort(adv, strconv.Itoa(lis.Addr().(*net.TCPAddr).Port))

	// The registry.
	rc := raftstore.DefaultConfig()
	if cc.RaftProfile == "fast" {
		rc = raftstore.TestConfig()
	}
	rc.ID = n.cfg.Name
	rc.Dir = filepath.Join(n.cfg.DataDir, "raft")
	rc.BindAddr = net.JoinHostPort(bind, strconv.Itoa(cc.RaftPort))
	rc.AdvertiseAddr = ""
	if ip := net.ParseIP(bind); ip == nil || ip.IsUnspecified() || adv != bind {
		rc.AdvertiseAddr = net.JoinHostPort(adv, strconv.Itoa(cc.RaftPort))
	}
	rc.Voter = cc.Voter()
	rc.Logger = n.log.With("component", "raft")
	if cc.RaftPort == 0 && rc.AdvertiseAddr != "" {
		rc.AdvertiseAddr = "" // resolved after bind below
	}
	store, err := raftstore.New(rc)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := store.Open(); err != nil {
		return fmt.Errorf("open registry: %w", err)
	}
	c.store = store
	raftAddr := store.Addr()
	if h, p, err := net.SplitHostPort(raftAddr); err == nil {
		if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
			raftAddr = net.JoinHostPort(adv, p)
		}
	}

	// Gossip.
	mc := mesh.DefaultConfig()
	if cc.MeshProfile == "local" {
		mc = mesh.TestConfig()
	}
	mc.Name = n.cfg.Name
	mc.BindAddr, mc.BindPort = bind, cc.GossipPort
	mc.AdvertiseAddr = adv
	mc.Join = cc.Join
	mc.SecretKey = cc.GossipKey
	mc.PeersFile = filepath.Join(n.cfg.DataDir, "peers.json")
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
	mc.Handler = &gossipHandler{n: n}
	mc.Logger = n.cfg.Logger.With("component", "mesh") // mesh adds the node name itself
	mc.Clock = n.cfg.Clock
	m, err := mesh.New(mc)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c.mesh = m
	c.writer = newRegistryWriter(c)
	n.cl = c // before Start: member events arrive at once
	if err := m.Start(); err != nil {
		return fmt.Errorf("gossip: %w", err)
	}
	// One join now, so that a wrong gossip key fails the start with an
	// error that says so; unreachable seeds are retried in the background.
	if len(cc.Join) > 0 {
		if _, err := m.Join(cc.Join); errors.Is(err, mesh.ErrKeyMismatch) {
			return fmt.Errorf("%w: %w", ErrGossipKey, err)
		} else if err != nil {
			n.log.Warn("join: no seed answered yet; retrying in the background", "join", cc.Join, "err", err)
		}
	}
	n.wg.Add(5)
	go c.digestLoop()
	go c.bootstrapLoop()
	go c.reconcileLoop()
	go c.writer.run()
	go c.refreshLoop()
	n.log.Info("mesh started", "gossip", m.LocalAddr(), "raft", raftAddr, "rpc", rpcAddr,
		"role", string(role), "join", cc.Join)
	return nil
}

// closeCluster leaves nothing running. A graceful Leave is separate (Leave).
func (c *cluster) close() {
	if c.mesh != nil {
		c.mesh.Shutdown()
	}
	if c.rpcSrv != nil {
		done := make(chan struct{})
		go func() { c.rpcSrv.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			c.rpcSrv.Stop()
		}
	}
	c.connMu.Lock()
	for _, cc := range c.conns {
		cc.Close()
	}
	c.conns = map[string]*grpc.ClientConn{}
	c.connMu.Unlock()
}

// closeStore closes the registry after every loop using it stopped.
func (c *cluster) closeStore() {
	if c.store != nil {
		if err := c.store.Close(); err != nil {
			c.n.log.Error("close registry", "err", err)
		}
	}
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

// peerConn returns a (cached) client connection to a node's rpc address.
func (c *cluster) peerConn(addr string) (*grpc.ClientConn, error) {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if cc, ok := c.conns[addr]; ok {
		return cc, nil
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 3 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(512<<20)))
	if err != nil {
		return nil, err
	}
	c.conns[addr] = cc
	return cc, nil
}

// clusterClientOf returns a Cluster client for the named node.
func (c *cluster) clusterClientOf(name string) (api.ClusterClient, error) {
	m, ok := c.member(name)
	if !ok || m.Meta.RPCAddr == "" {
		return nil, fmt.Errorf("node %q is not a known mesh member", name)
	}
	cc, err := c.peerConn(m.Meta.RPCAddr)
	if err != nil {
		return nil, err
	}
	return api.NewClusterClient(cc), nil
}

// applyCommand applies a registry command on the leader: here when this
// node leads, else forwarded over the cluster gRPC.
func (c *cluster) applyCommand(ctx context.Context, cmd raftstore.Command) (uint64, error) {
	var last error
	for attempt := 0; attempt < 50; attempt++ {
		idx, err := c.store.Apply(ctx, cmd)
		if err == nil {
			return idx, nil
		}
		var nl *raftstore.NotLeaderError
		if !errors.As(err, &nl) {
			// Leadership lost during the write: its outcome is unknown,
			// and an upsert is safe to repeat, so try the new leader.
			if !(errors.Is(err, raftstore.ErrUnknownOutcome) && errors.Is(err, raftstore.ErrNotLeader)) {
				return 0, err
			}
			nl = &raftstore.NotLeaderError{}
		}
		last = err
		if nl.LeaderID != "" {
			cl, cerr := c.clusterClientOf(nl.LeaderID)
			if cerr == nil {
				b, eerr := raftstore.EncodeCommand(cmd)
				if eerr != nil {
					return 0, eerr
				}
				// Each forward has its own short deadline: a leader cut off
				// by a partition must not eat the caller's whole budget
				// while the majority already elected another.
				fctx, cancel := context.WithTimeout(ctx, forwardTimeout)
				res, ferr := cl.Apply(fctx, &api.ApplyRequest{Command: b, Hops: 1})
				cancel()
				if ferr == nil {
					return res.Index, nil
				}
				last = ferr
			} else {
				last = cerr
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: %v", ErrNoLeader, last)
		case <-c.n.stop:
			return 0, ErrClosed
		case <-time.After(100 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("%w: %v", ErrNoLeader, last)
}

// roleLeaving marks a node that is leaving the mesh (no role): the
// reconciler does not add it to the registry.
const roleLeaving mesh.Role = ""

// forwardTimeout bounds one forward of a registry write or read to the
// leader.
const forwardTimeout = 2 * time.Second

// ErrClosed means the node is shutting down.
var ErrClosed = errors.New("the node is closing")

// bootstrapLoop forms the cluster when BootstrapExpect servers have met.
func (c *cluster) bootstrapLoop() {
	defer c.n.wg.Done()
	expect := c.cfg.bootstrapExpect()
	if expect == 0 {
		return
	}
	if has, err := c.store.HasState(); err != nil || has {
		return
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if id, _ := c.store.Leader(); id != "" {
			return
		}
		var servers []raftstore.Server
		for _, m := range c.mesh.Members() {
			if m.Status == mesh.StatusAlive && m.Meta.Role == mesh.RoleServer && m.Meta.RaftAddr != "" {
				servers = append(servers, raftstore.Server{ID: m.Name, Addr: m.Meta.RaftAddr, Voter: true})
			}
		}
		sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
		if len(servers) >= expect {
			servers = servers[:expect]
			in := false
			for _, s := range servers {
				in = in || s.ID == c.n.cfg.Name
			}
			if in {
				if err := c.store.Bootstrap(servers); err != nil {
					c.n.log.Warn("bootstrap", "err", err)
				} else {
					c.n.log.Info("registry bootstrapped", "servers", len(servers))
				}
				return
			}
		}
		select {
		case <-c.n.stop:
			return
		case <-t.C:
		}
	}
}

// reconcileLoop, on the leader, adds every alive mesh member to the Raft
// configuration: servers as voters, other nodes as non-voters. Removing a
// dead server is explicit (harn mesh remove).
func (c *cluster) reconcileLoop() {
	defer c.n.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.n.stop:
			return
		case <-t.C:
		case <-c.kickReconcile:
		}
		if !c.store.IsLeader() {
			continue
		}
		c.reconcile()
	}
}

func (c *cluster) reconcile() {
	servers, err := c.store.Servers()
	if err != nil {
		return
	}
	have := map[string]raftstore.Server{}
	for _, s := range servers {
		have[s.ID] = s
	}
	for _, m := range c.mesh.Members() {
		if m.Status != mesh.StatusAlive || m.Meta.RaftAddr == "" || m.Name == c.n.cfg.Name ||
			(m.Meta.Role != mesh.RoleServer && m.Meta.Role != mesh.RoleClient) {
			continue
		}
		want := m.Meta.Role == mesh.RoleServer
		cur, ok := have[m.Name]
		if ok && cur.Addr == m.Meta.RaftAddr && cur.Voter == want {
			continue
		}
		var err error
		if want {
			err = c.store.AddVoter(m.Name, m.Meta.RaftAddr)
		} else if !ok || cur.Addr != m.Meta.RaftAddr {
			err = c.store.AddNonvoter(m.Name, m.Meta.RaftAddr)
		} else {
			continue // a voter that now says client stays until removed
		}
		if err != nil {
			c.n.log.Warn("add to registry", "member", m.Name, "err", err)
		} else {
			c.n.log.Info("added to registry", "member", m.Name, "voter", want)
		}
	}
}

// memberEvent is called by mesh for every membership change.
func (n *Node) memberEvent(ev mesh.MemberEvent) {
	n.log.Info("member", "event", ev.Kind.String(), "member", ev.Member.Name, "status", string(ev.Member.Status))
	// A dead or departed node's gossip is stale from now on: readers fall
	// back to the registry until it gossips again.
	if ev.Member.Status == mesh.StatusDead || ev.Member.Status == mesh.StatusLeft {
		n.remote.dropNode(ev.Member.Name)
	}
	if c := n.cl; c != nil {
		select {
		case c.kickReconcile <- struct{}{}:
		default:
		}
	}
}

// nextVersion returns a strictly increasing gossip version, from the clock
// so that it keeps increasing across restarts.
func (c *cluster) nextVersion() uint64 {
	c.verMu.Lock()
	defer c.verMu.Unlock()
	v := uint64(c.n.cfg.Clock.Now().UnixNano())
	if v <= c.lastVer {
		v = c.lastVer + 1
	}
	c.lastVer = v
	return v
}
