package node

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// roleLeaving marks a node that is leaving the mesh (no role): the
// reconciler does not add it to the registry.
const roleLeaving mesh.Role = ""

// bootstrapLoop forms the cluster when BootstrapExpect servers have met.
func (c *cluster) bootstrapLoop() {
	expect := c.cfg.bootstrapExpect()
	if expect == 0 {
		return
	}
	if has, err := c.store.HasState(); err != nil || has {
		return
	}
	t := c.clock.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if id, _ := c.store.Leader(); id != "" {
			return
		}
		if servers, ok := c.bootstrapServers(expect); ok {
			if err := c.store.Bootstrap(servers); err != nil {
				c.log.Warn("bootstrap", "err", err)
			} else {
				c.log.Info("registry bootstrapped", "servers", len(servers))
			}
			return
		}
		select {
		case <-c.stop:
			return
		case <-t.C():
		}
	}
}

// bootstrapServers returns the first expect alive servers by name, when
// that many have met and this node is one of them.
func (c *cluster) bootstrapServers(expect int) ([]raftstore.Server, bool) {
	var servers []raftstore.Server
	for _, m := range c.mesh.Members() {
		if m.Status == mesh.StatusAlive && m.Meta.Role == mesh.RoleServer && m.Meta.RaftAddr != "" {
			servers = append(servers, raftstore.Server{ID: m.Name, Addr: m.Meta.RaftAddr, Voter: true})
		}
	}
	if len(servers) < expect {
		return nil, false
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
	servers = servers[:expect]
	for _, s := range servers {
		if s.ID == c.name {
			return servers, true
		}
	}
	return nil, false
}

// reconcileLoop, on the leader, adds every alive mesh member to the Raft
// configuration: servers as voters, other nodes as non-voters. Removing a
// dead server is explicit (harn mesh remove); a removed node (its
// certificates revoked) is never added back, and taken out if it is there.
func (c *cluster) reconcileLoop() {
	t := c.clock.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C():
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
	removed := c.removedNames()
	for name := range removed {
		// Removed, and still (or again) in the configuration: the
		// leader would replicate to it, and be refused, forever.
		if _, ok := have[name]; ok && name != c.name {
			if err := c.store.RemoveServer(name); err != nil {
				c.log.Warn("remove a removed node from the registry", "member", name, "err", err)
			} else {
				c.log.Info("removed from registry", "member", name, "why", "its certificates are revoked")
			}
		}
	}
	for _, m := range c.mesh.Members() {
		if m.Status != mesh.StatusAlive || m.Meta.RaftAddr == "" || m.Name == c.name ||
			(m.Meta.Role != mesh.RoleServer && m.Meta.Role != mesh.RoleClient) || removed[m.Name] {
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
			c.log.Warn("add to registry", "member", m.Name, "err", err)
		} else {
			c.log.Info("added to registry", "member", m.Name, "voter", want)
		}
	}
}

// isRemoved reports whether name was removed from the mesh (its
// certificates revoked), as of the last trust sync.
func (c *cluster) isRemoved(name string) bool {
	if c.trust == nil {
		return false
	}
	c.trust.mu.Lock()
	defer c.trust.mu.Unlock()
	return c.trust.removed[name]
}

// memberEvent is called by mesh for every membership change.
func (c *cluster) memberEvent(ev mesh.MemberEvent) {
	c.log.Info("member", "event", ev.Kind.String(), "member", ev.Member.Name, "status", string(ev.Member.Status))
	// A dead or departed node's gossip is stale from now on: readers fall
	// back to the registry until it gossips again.
	if ev.Member.Status == mesh.StatusDead || ev.Member.Status == mesh.StatusLeft {
		c.remote.DropNode(ev.Member.Name)
	}
	select {
	case c.kickReconcile <- struct{}{}:
	default:
	}
}

// digestLoop gossips this node's presence digest every PresenceRefresh. A
// peer whose copy differs (it missed a delta) pulls the full blob at once
// rather than waiting for the next push/pull: presence does not inherit
// gossip's rare long tail.
func (c *cluster) digestLoop() {
	t := c.clock.NewTicker(c.cfg.PresenceRefresh)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C():
		}
		c.pub.BroadcastDigest(c.local.localDigest())
		c.dropRevoked()
	}
}

// checkDigest compares a peer's gossiped digest with what this node holds
// for it, and pulls the peer's full presence when they differ.
func (c *cluster) checkDigest(from string, digest []byte) {
	if c.remote.Digest(from) == string(digest) {
		return
	}
	c.startPull(from)
}

// pullUnknown pulls the presence of a peer whose gossip came signed with a
// certificate this node does not know yet (a renewal): the pull's mutual
// TLS handshake shows the peer's current certificate. At most once per
// unknownPullEvery per origin, and only for a known member.
func (c *cluster) pullUnknown(origin string) {
	if _, ok := c.member(origin); !ok {
		return
	}
	now := c.clock.Now()
	c.pullMu.Lock()
	if now.Sub(c.unknownAt[origin]) < unknownPullEvery {
		c.pullMu.Unlock()
		return
	}
	if len(c.unknownAt) >= maxSignerNames {
		clear(c.unknownAt)
	}
	c.unknownAt[origin] = now
	c.pullMu.Unlock()
	c.startPull(origin)
}

// startPull pulls a peer's presence in the background, one pull per peer
// at a time.
func (c *cluster) startPull(from string) {
	c.pullMu.Lock()
	if c.pulling[from] {
		c.pullMu.Unlock()
		return
	}
	c.pulling[from] = true
	c.pullMu.Unlock()
	c.start(func() {
		defer func() {
			c.pullMu.Lock()
			delete(c.pulling, from)
			c.pullMu.Unlock()
		}()
		c.pull(from)
	})
}

// pull fetches a peer's full presence over the cluster gRPC (mutual TLS
// that expects the peer's certificate, with trust on) and merges it as
// that peer's. The answer is bounded by MaxPresenceBytes and its entries
// by gossip.MaxBlobEntries.
func (c *cluster) pull(from string) {
	if c.isRemoved(from) {
		return // its certificate is revoked: the dial would be refused
	}
	cl, err := c.clusterClientOf(from)
	if err != nil {
		return
	}
	sctx, stop := c.stopContext(context.Background())
	defer stop()
	ctx, cancel := context.WithTimeout(sctx, c.cfg.PullTimeout)
	defer cancel()
	var p grpcpeer.Peer
	res, err := cl.Presence(ctx, &api.PresenceRequest{}, grpc.MaxCallRecvMsgSize(c.cfg.MaxPresenceBytes), grpc.Peer(&p))
	if err != nil {
		if status.Code(err) == codes.ResourceExhausted {
			c.dropped.Add(1)
			c.log.Warn("presence pull over the size bound refused", "from", from, "limit", c.cfg.MaxPresenceBytes)
			return
		}
		c.log.Debug("presence pull", "from", from, "err", err)
		return
	}
	if c.trust != nil {
		// The connection may predate a revocation of the peer's
		// certificate (the handshake checked it, calls do not): check
		// the certificate that answered now.
		ti, ok := p.AuthInfo.(credentials.TLSInfo)
		if !ok || len(ti.State.PeerCertificates) == 0 {
			return
		}
		id, err := trust.CertIdentity(ti.State.PeerCertificates[0])
		if err != nil || id.Name != from || c.trust.revs.IsRevoked(id.Serial) {
			c.log.Debug("presence pull from a revoked or other certificate dropped", "from", from, "identity", id.String())
			return
		}
		if c.signer != nil {
			c.signer.learnPeer(ti.State.PeerCertificates[0])
		}
	}
	var b gossip.Blob
	if err := json.Unmarshal(res.Blob, &b); err != nil {
		return
	}
	if err := gossip.CheckBlob(&b); err != nil {
		c.dropped.Add(1)
		c.log.Warn("presence pull refused", "from", from, "err", err)
		return
	}
	b.Node = from
	c.remote.Merge(b)
	c.pulls.Add(1)
}

// dropRevoked forgets the gossiped presence of nodes whose every known
// certificate is now revoked (a removed node): its deltas are refused from
// the revocation on, and what it said before goes too.
func (c *cluster) dropRevoked() {
	if c.signer == nil {
		return
	}
	for _, name := range c.signer.prune() {
		c.log.Info("presence of a node with a revoked certificate dropped", "member", name)
		c.remote.DropNode(name)
	}
}

// refreshLoop resyncs the registry with the node's sessions once a leader
// is first known, and then every ResyncInterval.
func (c *cluster) refreshLoop() {
	ctx, cancel := c.stopContext(context.Background())
	defer cancel()
	if err := c.store.WaitForLeader(ctx); err != nil {
		return
	}
	for {
		c.writer.Resync(c.local.Sessions(true), c.store)
		if !clock.Sleep(c.clock, c.cfg.ResyncInterval, c.stop) {
			return
		}
	}
}
