package node

import (
	"time"

	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/meshops"
)

// MemberView is wire.MemberView.
type MemberView = wire.MemberView

// RaftView is wire.RaftView.
type RaftView = wire.RaftView

// LeaveWithin leaves the mesh gracefully (node/meshops), bounded by
// budget in all. The node goes on serving its local socket; stop it
// afterwards.
func (n *Node) LeaveWithin(budget time.Duration) error {
	if n.cl == nil {
		return ErrNoMesh
	}
	return meshops.LeaveWithin(n.cl, n.cfg.Name, n.cfg.Clock, n.log, budget)
}
