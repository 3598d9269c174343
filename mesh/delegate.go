package mesh

import "github.com/hashicorp/memberlist"

// delegate adapts memberlist.Delegate to the Mesh: node meta, user
// messages (deltas and leave intents), the gossip queue and push/pull state.
type delegate struct{ m *Mesh }

var _ memberlist.Delegate = (*delegate)(nil)

func (d *delegate) NodeMeta(limit int) []byte {
	b := d.m.encodedMeta()
	if len(b) > limit {
		// Validate and SetMeta keep it within memberlist.MetaMaxSize.
		d.m.log.Error("node meta over the limit; sending none", "n", len(b), "limit", limit)
		return nil
	}
	return b
}

// NotifyMsg: b belongs to memberlist and is only valid during the call.
func (d *delegate) NotifyMsg(b []byte) { d.m.handleMsg(b) }

func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.m.queue.get(overhead, limit)
}

func (d *delegate) LocalState(join bool) []byte { return d.m.localState() }

func (d *delegate) MergeRemoteState(buf []byte, join bool) { d.m.mergeState(buf) }
