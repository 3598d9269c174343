package node

import (
	"encoding/json"

	"github.com/harn-dev/harn/mesh"
)

// gossipHandler adapts the node to mesh.Handler.
type gossipHandler struct{ n *Node }

var _ mesh.Handler = (*gossipHandler)(nil)

func (h *gossipHandler) LocalState() []byte {
	b, err := json.Marshal(h.n.localBlob())
	if err != nil {
		h.n.log.Error("presence blob", "err", err)
		return nil
	}
	return b
}

func (h *gossipHandler) MergeRemoteState(from string, data []byte) {
	if from == h.n.cfg.Name || len(data) == 0 {
		return
	}
	var b blob
	if err := json.Unmarshal(data, &b); err != nil {
		h.n.log.Warn("presence blob from peer", "from", from, "err", err)
		return
	}
	b.Node = from
	h.n.remote.merge(b)
}

func (h *gossipHandler) ApplyDelta(from, key string, version uint64, delta []byte) {
	if from == h.n.cfg.Name {
		return
	}
	if key == digestKey {
		if c := h.n.cl; c != nil {
			c.checkDigest(from, delta)
		}
		return
	}
	var e PresenceEntry
	if err := json.Unmarshal(delta, &e); err != nil || e.SessionID != key {
		h.n.log.Warn("presence delta from peer", "from", from, "key", key, "err", err)
		return
	}
	h.n.remote.apply(from, version, e)
}

func (h *gossipHandler) MemberEvent(ev mesh.MemberEvent) {
	h.n.memberEvent(ev)
}
