package gossip

import (
	"encoding/json"
	"log/slog"

	"github.com/harn-dev/harn/mesh"
)

// Handler adapts presence gossip to mesh.Handler: it decodes what peers
// send into the Table, and asks for this node's blob on push/pull. A peer
// can only ever write its own entries.
type Handler struct {
	// Self is this node's name; its own messages are ignored.
	Self  string
	Table *Table
	Log   *slog.Logger
	// Local returns this node's full presence (nil: an empty blob).
	Local func() Blob
	// OnDigest is told of a peer's digest (nil: ignored).
	OnDigest func(from string, digest []byte)
	// OnMember is told of every membership change (nil: ignored).
	OnMember func(ev mesh.MemberEvent)
}

var _ mesh.Handler = (*Handler)(nil)

// LocalState encodes this node's blob.
func (h *Handler) LocalState() []byte {
	b := Blob{Node: h.Self}
	if h.Local != nil {
		b = h.Local()
	}
	out, err := json.Marshal(b)
	if err != nil {
		h.Log.Error("presence blob", "err", err)
		return nil
	}
	return out
}

// MergeRemoteState merges a peer's blob.
func (h *Handler) MergeRemoteState(from string, data []byte) {
	if from == h.Self || len(data) == 0 {
		return
	}
	var b Blob
	if err := json.Unmarshal(data, &b); err != nil {
		h.Log.Warn("presence blob from peer", "from", from, "err", err)
		return
	}
	if err := CheckBlob(&b); err != nil {
		h.Log.Warn("presence blob from peer refused", "from", from, "err", err)
		return
	}
	b.Node = from
	h.Table.Merge(b)
}

// ApplyDelta applies a peer's delta, or hands its digest to OnDigest.
func (h *Handler) ApplyDelta(from, key string, version uint64, delta []byte) {
	if from == h.Self {
		return
	}
	if key == DigestKey {
		if h.OnDigest != nil {
			h.OnDigest(from, delta)
		}
		return
	}
	e, err := DecodeDelta(delta)
	if err != nil || e.GetSessionId() != key {
		h.Log.Warn("presence delta from peer", "from", from, "key", key, "err", err)
		return
	}
	h.Table.Apply(from, version, e)
}

// MemberEvent passes a membership change on.
func (h *Handler) MemberEvent(ev mesh.MemberEvent) {
	if h.OnMember != nil {
		h.OnMember(ev)
	}
}
