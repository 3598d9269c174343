package node

import (
	"context"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

// What the node asks of its cluster part: its fields stay its own.

// members lists the mesh's members, dead and departed ones included.
func (c *cluster) members() []mesh.Member { return c.mesh.Members() }

// raftStats is the registry's Raft state as this node sees it.
func (c *cluster) raftStats() raftstore.Stats { return c.store.Stats() }

// staleness says how stale the local replica may be.
func (c *cluster) staleness() raftstore.ReadInfo { return c.store.Staleness() }

// records are the local replica's records, unsorted.
func (c *cluster) records() []raftstore.Record { return c.store.Records() }

// sortedRecords are the local replica's records, sorted.
func (c *cluster) sortedRecords() []raftstore.Record { return c.store.List() }

// record is the local replica's record of a session.
func (c *cluster) record(id string) (raftstore.Record, bool) { return c.store.Get(id) }

// leading is whether this node leads the registry now.
func (c *cluster) leading() bool { return c.store.IsLeader() }

// leaderID is the registry leader's name, "" without one.
func (c *cluster) leaderID() string {
	id, _ := c.store.Leader()
	return id
}

// verifyRead makes the following local reads linearizable (leader only).
func (c *cluster) verifyRead(ctx context.Context) error { return c.store.VerifyRead(ctx) }

// waitApplied waits until the local replica applied idx.
func (c *cluster) waitApplied(ctx context.Context, idx uint64) error {
	return c.store.WaitForApplied(ctx, idx)
}

// notifyHooks are the mesh's webhooks in the local replica, and their
// registry index.
func (c *cluster) notifyHooks() ([]raftstore.NotifyHook, uint64) { return c.store.NotifyHooks() }

// claimsTable is the claims room's table: the local replica.
func (c *cluster) claimsTable() claims.Table { return c.store }

// holdRecord keeps the registry writer from writing session until the
// release: a declaration writes the registry itself (syncRecord).
func (c *cluster) holdRecord(session string) func() { return c.writer.Hold(session) }

// syncRecord writes st's record through the leader and waits for it.
func (c *cluster) syncRecord(ctx context.Context, st presence.State) error {
	return c.writer.Sync(ctx, st)
}

// republish gossips a session's entry again (its harn task changed).
func (c *cluster) republish(st *presence.State, hash string) { c.pub.Publish(st, hash) }

// decorate sets what adds the harn task to each gossiped entry.
func (c *cluster) decorate(f func(*gossip.Entry)) { c.pub.SetDecorate(f) }

// hasTrust is whether the mesh has a CA (callers can be told apart).
func (c *cluster) hasTrust() bool { return c.trust != nil }

// announceLeaving tells the others, in this node's metadata, that it is
// leaving, so that the leader's reconciler does not add it back.
func (c *cluster) announceLeaving(timeout time.Duration) error {
	meta := c.meta
	meta.Role = roleLeaving
	return c.mesh.SetMeta(meta, timeout)
}

// raftServers is the registry's Raft configuration.
func (c *cluster) raftServers() ([]raftstore.Server, error) { return c.store.Servers() }

// leaveMesh leaves the gossip mesh gracefully.
func (c *cluster) leaveMesh(timeout time.Duration) error { return c.mesh.Leave(timeout) }

// gossipAddr, raftAddr and rpcAddr are where the cluster listens; "" for
// what is not open.
func (c *cluster) gossipAddr() string {
	if c.mesh == nil {
		return ""
	}
	return c.mesh.LocalAddr()
}

func (c *cluster) raftAddr() string {
	if c.store == nil {
		return ""
	}
	return c.store.Addr()
}

func (c *cluster) rpcAddr() string {
	if c.rpcLis == nil {
		return ""
	}
	return c.rpcLis.Addr().String()
}
