package node

import (
	"testing"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/raftstore"
)

// TestLayoutKeepsTheDaemonsDefaults: the defaults the client names in its
// flags (node/layout) are the daemon's own.
func TestLayoutKeepsTheDaemonsDefaults(t *testing.T) {
	if layout.DefaultSessionQuota != raftstore.DefaultSessionQuota {
		t.Fatalf("layout.DefaultSessionQuota %d, raftstore's %d", layout.DefaultSessionQuota, raftstore.DefaultSessionQuota)
	}
	if layout.GossipKeySize != mesh.KeySize {
		t.Fatalf("layout.GossipKeySize %d, mesh.KeySize %d", layout.GossipKeySize, mesh.KeySize)
	}
}

// TestLayoutGossipKeyWordsAsMesh: the client's check of a gossip key
// (harn doctor) accepts and refuses as the mesh's does, in the same words.
func TestLayoutGossipKeyWordsAsMesh(t *testing.T) {
	k, err := layout.GenerateGossipKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{k, k + "\n", "not base64!", "AAAA", ""} {
		_, lerr := layout.DecodeGossipKey(s)
		_, merr := mesh.DecodeKey(s)
		if (lerr == nil) != (merr == nil) || (lerr != nil && lerr.Error() != merr.Error()) {
			t.Errorf("%q: layout %v, mesh %v", s, lerr, merr)
		}
	}
}
