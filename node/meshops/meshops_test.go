package meshops

import (
	"testing"

	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/raftstore"
)

// TestMarkStaleComparesWithTheAdvertisedAddress: a server whose raft
// configuration entry differs from the raft address it advertises in the
// mesh is stale, with the advertised address; one at its advertised
// address, or one the mesh does not know, is not.
func TestMarkStaleComparesWithTheAdvertisedAddress(t *testing.T) {
	servers := []raftstore.Server{
		{ID: "a", Addr: "10.0.0.1:7711", Voter: true},
		{ID: "b", Addr: "10.0.0.2:7711", Voter: true}, // restarted on 8711
		{ID: "c", Addr: "10.0.0.3:7711", Voter: false},
		{ID: "gone", Addr: "10.0.0.9:7711", Voter: true},
	}
	members := []wire.MemberView{
		{Name: "a", Raft: "10.0.0.1:7711", Status: "alive"},
		{Name: "b", Raft: "10.0.0.2:8711", Status: "alive"},
		{Name: "c", Raft: "10.0.0.3:7711", Status: "alive"},
		{Name: "laptop", Raft: "10.0.0.7:7711", Status: "alive"}, // not in the configuration
		{Name: "noraft", Status: "alive"},
	}
	got := markStale(servers, members)
	if len(got) != len(servers) {
		t.Fatalf("%d servers, want %d: %+v", len(got), len(servers), got)
	}
	for _, s := range got {
		wantStale := s.ID == "b"
		if s.Stale != wantStale {
			t.Errorf("%s: stale %v, want %v", s.ID, s.Stale, wantStale)
		}
		if wantStale && s.Advertises != "10.0.0.2:8711" {
			t.Errorf("%s advertises %q", s.ID, s.Advertises)
		}
		if !wantStale && s.Advertises != "" {
			t.Errorf("%s: advertises %q set on a server that is not stale", s.ID, s.Advertises)
		}
	}
	if got[1].Addr != "10.0.0.2:7711" || !got[1].Voter {
		t.Errorf("the entry itself changed: %+v", got[1])
	}
}
