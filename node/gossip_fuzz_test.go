package node

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
)

// FuzzGossipHandler: deltas and blobs come from other machines; decoding
// them never panics and never lets a peer write another node's entries.
func FuzzGossipHandler(f *testing.F) {
	e := PresenceEntry{SessionID: "s1", Activity: "working", TaskState: "active", Hash: "h"}
	d, _ := json.Marshal(e)
	b, _ := json.Marshal(blob{Node: "peer", At: 9, Entries: []PresenceEntry{e}, Versions: []uint64{3}})
	f.Add(d, b, "s1", uint64(1))
	f.Add([]byte("{"), []byte(`{"entries":[{}],"versions":[]}`), "", uint64(0))
	f.Fuzz(func(t *testing.T, delta, full []byte, key string, version uint64) {
		n := &Node{remote: newRemotePresence()}
		n.cfg.Name = "me"
		n.log = discardLogger()
		h := &gossipHandler{n: n}
		h.ApplyDelta("peer", key, version, delta)
		h.MergeRemoteState("peer", full)
		for node := range n.remote.nodes {
			if node != "peer" {
				t.Fatalf("a peer's message wrote entries for %q", node)
			}
		}
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
