package cluster

import (
	"context"
	"sort"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// roleLeaving marks a node that is leaving the mesh (no role): the
// reconciler does not add it to the registry.
const roleLeaving mesh.Role = ""

// membership keeps the registry's raft configuration in step with the
// mesh: it bootstraps the servers, adds members on the leader, and moves
// a restarted server's raft address.
type membership struct {
	c    *Cluster
	kick chan struct{} // capacity 1: a member changed
}

// bootstrapLoop forms the cluster when BootstrapExpect servers have met.
func (ms *membership) bootstrapLoop() {
	c := ms.c
	expect := c.cfg.BootstrapExpectN()
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
		if servers, ok := ms.bootstrapServers(expect); ok {
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
func (ms *membership) bootstrapServers(expect int) ([]raftstore.Server, bool) {
	c := ms.c
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

// reconcileEvery is how often the leader looks at the raft configuration
// without a member event (which makes it look at once).
const reconcileEvery = 5 * time.Second

// reconcileLoop, on the leader, keeps the Raft configuration to the
// servers (voters) and read replicas (non-voters) among the alive members
// (raftRole); every other node follows a server's watch and is not in it.
// Removing a dead server is explicit (harn mesh remove); a removed node
// (its certificates revoked) is never added back, and taken out if it is
// there.
func (ms *membership) reconcileLoop() {
	c := ms.c
	t := c.clock.NewTicker(reconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C():
		case <-ms.kick:
		}
		if !c.store.IsLeader() {
			continue
		}
		ms.reconcile()
	}
}

func (ms *membership) reconcile() {
	c := ms.c
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
		if m.Status != mesh.StatusAlive || m.Name == c.name || removed[m.Name] {
			continue
		}
		cur, ok := have[m.Name]
		want, member := raftRole(m.Meta)
		if !member {
			// A node of this landing that is neither server nor replica
			// holds no raft log (it follows a watch): one still in the
			// configuration (it was a non-voter before an upgrade) is
			// taken out, so that the leader stops replicating to it.
			if ok && !cur.Voter && m.Meta.Role == mesh.RoleClient && m.Meta.RaftAddr == "" {
				if err := c.store.RemoveServer(m.Name); err != nil {
					c.log.Warn("remove a node that holds no raft log from the registry", "member", m.Name, "err", err)
				} else {
					c.log.Info("removed from registry", "member", m.Name, "why", "it follows the registry's watch")
				}
			}
			continue
		}
		if ok && cur.Addr == m.Meta.RaftAddr && cur.Voter == want {
			continue
		}
		var err error
		if want {
			err = c.store.AddVoter(m.Name, m.Meta.RaftAddr)
		} else if !ok || cur.Addr != m.Meta.RaftAddr {
			err = c.store.AddNonvoter(m.Name, m.Meta.RaftAddr)
		} else {
			continue // a voter that now says replica stays until removed
		}
		if err != nil {
			c.log.Warn("add to registry", "member", m.Name, "err", err)
		} else {
			c.log.Info("added to registry", "member", m.Name, "voter", want)
		}
	}
}

// raftRole says whether a member with meta belongs in the raft
// configuration, and as a voter: servers vote; read replicas do not, nor
// does a node of an earlier landing (role client with a raft address: it
// was a non-voting replica, and stays one until it is upgraded). Every
// other node holds no raft log.
func raftRole(meta mesh.NodeMeta) (voter, member bool) {
	if meta.RaftAddr == "" {
		return false, false
	}
	switch meta.Role {
	case mesh.RoleServer:
		return true, true
	case mesh.RoleReplica, mesh.RoleClient:
		return false, true
	}
	return false, false
}

// removedNames are the nodes removed from the mesh (nil without a CA).
func (c *Cluster) removedNames() map[string]bool {
	if c.trust == nil {
		return nil
	}
	return c.trust.RemovedNames()
}

// isRemoved reports whether name was removed from the mesh (its
// certificates revoked), as of the last trust sync.
func (c *Cluster) isRemoved(name string) bool {
	return c.trust != nil && c.trust.IsRemoved(name)
}

// memberEvent is called by mesh for every membership change.
func (ms *membership) memberEvent(ev mesh.MemberEvent) {
	c := ms.c
	c.log.Info("member", "event", ev.Kind.String(), "member", ev.Member.Name, "status", string(ev.Member.Status))
	// A dead or departed node's gossip is stale from now on: readers fall
	// back to the registry until it gossips again.
	if ev.Member.Status == mesh.StatusDead || ev.Member.Status == mesh.StatusLeft {
		c.remote.DropNode(ev.Member.Name)
	}
	select {
	case ms.kick <- struct{}{}:
	default:
	}
}

// refreshLoop resyncs the registry with the node's sessions once a leader
// is first known, and then every ResyncInterval.
func (c *Cluster) refreshLoop() {
	ctx, cancel := c.stopContext(context.Background())
	defer cancel()
	if err := c.reg.WaitForLeader(ctx); err != nil {
		return
	}
	for {
		c.writer.Resync(c.local.Sessions(true), c.reg)
		if !clock.Sleep(c.clock, c.cfg.ResyncInterval, c.stop) {
			return
		}
	}
}
