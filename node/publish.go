package node

import (
	"context"
	"errors"
	"time"

	"github.com/harn-dev/harn/mesh"
)

// publish tells the mesh about a session's change: a gossip delta when its
// presence hash changed, and the registry writer in any case (it decides
// what the registry needs).
func (c *cluster) publish(p published) {
	c.writer.observe(p.state)
	if !p.changed {
		return
	}
	c.sentMu.Lock()
	if c.sent[p.state.SessionID] == p.hash {
		c.sentMu.Unlock()
		return
	}
	c.sent[p.state.SessionID] = p.hash
	c.sentMu.Unlock()
	delta, err := encodeDelta(entryOf(&p.state, p.hash))
	if err != nil {
		c.n.log.Error("presence delta", "session", p.state.SessionID, "err", err)
		return
	}
	v := c.nextVersion()
	c.sentMu.Lock()
	c.sentVer[p.state.SessionID] = v
	c.sentMu.Unlock()
	if err := c.mesh.Broadcast(p.state.SessionID, v, delta); err != nil && !errors.Is(err, mesh.ErrShutdown) {
		c.n.log.Warn("presence broadcast", "session", p.state.SessionID, "err", err)
	}
}

// localBlob is this node's full presence for push/pull: its live
// sessions. A receiver drops what the blob no longer lists.
func (n *Node) localBlob() blob {
	b := blob{Node: n.cfg.Name}
	if n.cl == nil {
		return b
	}
	b.At = n.cl.nextVersion()
	n.mu.Lock()
	for _, e := range n.sessions {
		if e.state.Events == 0 || e.state.Ended {
			continue
		}
		b.Entries = append(b.Entries, entryOf(&e.state, e.hash))
	}
	n.mu.Unlock()
	n.cl.sentMu.Lock()
	for _, e := range b.Entries {
		v, ok := n.cl.sentVer[e.SessionID]
		if !ok {
			v = b.At
		}
		b.Versions = append(b.Versions, v)
	}
	n.cl.sentMu.Unlock()
	return b
}

// resyncInterval is how often the node compares its sessions with the
// registry and rewrites what differs.
const resyncInterval = 30 * time.Second

// refreshLoop resyncs the registry with the node's sessions once a leader
// is first known, and then every resyncInterval.
func (c *cluster) refreshLoop() {
	defer c.n.wg.Done()
	ctx, cancel := c.n.stopContext(context.Background())
	defer cancel()
	if err := c.store.WaitForLeader(ctx); err != nil {
		return
	}
	for {
		c.writer.resync(c.n.Sessions(true))
		select {
		case <-c.n.stop:
			return
		case <-time.After(resyncInterval):
		}
	}
}
