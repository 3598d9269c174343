package mesh

import "github.com/hashicorp/memberlist"

// eventDelegate adapts memberlist.EventDelegate to the member table.
// memberlist calls it with its node lock held: it must not call back into
// memberlist, and it does not call the Handler (events are queued and
// delivered by the Mesh's event goroutine).
type eventDelegate struct{ m *Mesh }

var _ memberlist.EventDelegate = (*eventDelegate)(nil)

func (e *eventDelegate) NotifyJoin(n *memberlist.Node)   { e.m.onJoin(n) }
func (e *eventDelegate) NotifyLeave(n *memberlist.Node)  { e.m.onLeave(n) }
func (e *eventDelegate) NotifyUpdate(n *memberlist.Node) { e.m.onUpdate(n) }
