package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/registry"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

// What the node asks of its cluster part: its fields stay its own.

// Replica is the registry as this node reads it.
type Replica = replica

// Members lists the mesh's members, dead and departed ones included.
func (c *Cluster) Members() []mesh.Member { return c.mesh.Members() }

// RaftStats is the registry's Raft state as this node sees it: its own
// raft's on a server or replica; elsewhere what the watched server last
// reported (state "watch").
func (c *Cluster) RaftStats() raftstore.Stats {
	if c.store != nil {
		return c.store.Stats()
	}
	p := c.mirror.LastProgress()
	return raftstore.Stats{ID: c.name, State: StateWatch, LeaderID: p.Leader, Term: p.Term, CommitIndex: p.CommitIndex,
		AppliedIndex: c.mirror.Applied(), Sessions: len(c.mirror.Records()), Read: c.mirror.Staleness(), Servers: p.Servers}
}

// StateWatch is the raft state RaftStats reports on a node that holds no
// raft log and follows a server's watch.
const StateWatch = "Watch"

// WatchSource is the server this node's registry watch follows ("" on a
// server or replica, or before any report).
func (c *Cluster) WatchSource() string {
	if c.mirror == nil {
		return ""
	}
	return c.mirror.Source()
}

// Registry is the registry's replica this node reads (possibly stale;
// see its Staleness).
func (c *Cluster) Registry() Replica { return c.reg }

// ConsistentRecords reads the registry through the leader (a
// linearizable read): here when this node leads, else the leader's
// ConsistentList. The ReadInfo names the leader and its index.
func (c *Cluster) ConsistentRecords(ctx context.Context) ([]raftstore.Record, raftstore.ReadInfo, error) {
	st := c.reg.Staleness()
	if c.reg.IsLeader() {
		if err := c.store.VerifyRead(ctx); err != nil {
			return nil, st, fmt.Errorf("%w: %w", ErrNoLeader, err)
		}
		st.Stale, st.AppliedIndex = false, c.store.Staleness().AppliedIndex
		return c.reg.List(), st, nil
	}
	if st.LeaderID == "" {
		return nil, st, ErrNoLeader
	}
	cl, err := c.ClientOf(st.LeaderID)
	if err != nil {
		return nil, st, fmt.Errorf("%w: %w", ErrNoLeader, err)
	}
	fctx, cancel := context.WithTimeout(ctx, c.cfg.ForwardTimeout)
	res, err := cl.ConsistentList(fctx, &api.ConsistentListRequest{})
	cancel()
	if err != nil {
		return nil, st, fmt.Errorf("%w: %w", ErrNoLeader, err)
	}
	if err := CheckPeerList("node "+st.LeaderID, "registry records", len(res.Records)); err != nil {
		return nil, st, err
	}
	recs := make([]raftstore.Record, 0, len(res.Records))
	for _, r := range res.Records {
		recs = append(recs, RecordFromAPI(r))
	}
	st.Stale, st.LeaderID, st.AppliedIndex = false, res.Leader, res.Index
	return recs, st, nil
}

// Publish tells the mesh about a session's change: a gossip delta when
// its presence hash changed, and the registry writer in any case (it
// decides what the registry needs). A registry write of the session is
// left to the writer unless record is false (its harn task changed, not
// its state).
func (c *Cluster) Publish(st presence.State, hash string, changed, record bool) {
	if record {
		c.writer.Observe(st)
	}
	if changed {
		c.pub.Publish(&st, hash)
	}
}

// Writer is the registry writer of this node's sessions (a declaration
// holds it and writes its own change: Hold, Sync).
func (c *Cluster) Writer() *registry.Writer { return c.writer }

// HasTrust is whether the mesh has a CA (callers can be told apart).
func (c *Cluster) HasTrust() bool { return c.trust != nil }

// AnnounceLeaving tells the others, in this node's metadata, that it is
// leaving, so that the leader's reconciler does not add it back.
func (c *Cluster) AnnounceLeaving(timeout time.Duration) error {
	meta := c.meta
	meta.Role = roleLeaving
	return c.mesh.SetMeta(meta, timeout)
}

// RaftServers is the registry's Raft configuration (as last reported, on
// a node that follows a watch).
func (c *Cluster) RaftServers() ([]raftstore.Server, error) {
	if c.store != nil {
		return c.store.Servers()
	}
	return c.mirror.LastProgress().Servers, nil
}

// LeaveMesh leaves the gossip mesh gracefully.
func (c *Cluster) LeaveMesh(timeout time.Duration) error { return c.mesh.Leave(timeout) }

// Addrs are where the cluster listens; "" for what is not open.
type Addrs struct {
	Gossip, Raft, RPC string
}

// Addrs is where the cluster listens.
func (c *Cluster) Addrs() Addrs {
	var a Addrs
	if c.mesh != nil {
		a.Gossip = c.mesh.LocalAddr()
	}
	if c.store != nil {
		a.Raft = c.store.Addr()
	}
	if c.rpcLis != nil {
		a.RPC = c.rpcLis.Addr().String()
	}
	return a
}

// Parts are the cluster's parts, for tests and benchmarks that look
// inside: never for the node's own use.
type Parts struct {
	Mesh   *mesh.Mesh
	Store  *raftstore.Store
	Trust  *meshtrust.Trust
	Signer *meshtrust.Signer
	Pub    *gossip.Publisher
	// Pulls counts anti-entropy pulls; Dropped presence blobs refused for
	// their size.
	Pulls, Dropped int64
}

// Parts returns the cluster's parts (tests and benchmarks).
func (c *Cluster) Parts() Parts {
	return Parts{Mesh: c.mesh, Store: c.store, Trust: c.trust, Signer: c.signer, Pub: c.pub,
		Pulls: c.presence.pulls.Load(), Dropped: c.presence.dropped.Load()}
}
