package mesh

import (
	"time"

	"github.com/hashicorp/memberlist"
)

// pingDelegate adapts memberlist.PingDelegate: a completed probe proves the
// peer reachable, which clears a suspicion this node raised.
type pingDelegate struct{ m *Mesh }

var _ memberlist.PingDelegate = (*pingDelegate)(nil)

func (p *pingDelegate) AckPayload() []byte { return nil }

func (p *pingDelegate) NotifyPingComplete(other *memberlist.Node, _ time.Duration, _ []byte) {
	p.m.onReachable(other.Name)
}
