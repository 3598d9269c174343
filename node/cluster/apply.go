package cluster

import (
	"context"
	"errors"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/forward"
	"github.com/harn-dev/harn/raftstore"
)

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

// leaderElsewhere is the forwarding path's answer on a node that holds no
// raft log: the leader its watch last named (none yet: wait for one).
func (c *Cluster) leaderElsewhere() error {
	id, _ := c.reg.Leader()
	return &forward.ElsewhereError{Leader: id, Err: raftstore.ErrNotLeader}
}

// Apply applies a registry command on the leader: here when this node
// leads, else forwarded over the cluster gRPC. It returns the entry's
// index (wait for it with the registry's WaitForApplied).
func (c *Cluster) Apply(ctx context.Context, cmd raftstore.Command) (uint64, error) {
	var idx uint64
	// A refusal at the leader is final: stop the retries with it.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var final error
	err := c.fwd.Do(ctx, func() error {
		if c.store == nil {
			return c.leaderElsewhere()
		}
		var err error
		idx, err = c.store.Apply(ctx, cmd)
		return elsewhere(err)
	}, func(fctx context.Context, leader string) error {
		cl, err := c.ClientOf(leader)
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

// RemoveServer removes a server from the Raft configuration on the
// leader (forwarded when this node does not lead). It retries while
// leadership moves, within ctx.
func (c *Cluster) RemoveServer(ctx context.Context, id string) error {
	return c.fwd.Do(ctx, func() error {
		if c.store == nil {
			return c.leaderElsewhere()
		}
		return elsewhere(c.store.RemoveServer(id))
	}, func(fctx context.Context, leader string) error {
		cl, err := c.ClientOf(leader)
		if err != nil {
			return err
		}
		_, err = cl.RemoveServer(fctx, &api.RemoveServerRequest{Id: id})
		return err
	})
}

// moveServer moves a server's raft address on the leader: here when this
// node leads, else forwarded.
func (c *Cluster) moveServer(ctx context.Context, id, addr string) error {
	return c.fwd.Do(ctx, func() error {
		if c.store == nil {
			return c.leaderElsewhere()
		}
		return elsewhere(c.store.MoveServer(id, addr))
	}, func(fctx context.Context, leader string) error {
		cl, err := c.ClientOf(leader)
		if err != nil {
			return err
		}
		_, err = cl.MoveServer(fctx, &api.MoveServerRequest{Id: id, Addr: addr})
		return err
	})
}
