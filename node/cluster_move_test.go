package node

import (
	"errors"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/trust"
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
	members := []MemberView{
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

// TestCheckMoveBoundsTheRequest: a peer's MoveServer needs an id and a
// host:port of bounded size.
func TestCheckMoveBoundsTheRequest(t *testing.T) {
	if err := checkMove(&api.MoveServerRequest{Id: "b", Addr: "10.0.0.2:8711"}); err != nil {
		t.Errorf("a good request: %v", err)
	}
	for _, req := range []*api.MoveServerRequest{
		{Id: "", Addr: "10.0.0.2:8711"},
		{Id: strings.Repeat("n", 65), Addr: "10.0.0.2:8711"},
		{Id: "b", Addr: "10.0.0.2"},
		{Id: "b", Addr: strings.Repeat("h", 300) + ":1"},
	} {
		if err := checkMove(req); !errors.Is(err, raftstore.ErrConfig) {
			t.Errorf("%q %q: %v, want ErrConfig", req.Id, req.Addr, err)
		}
	}
}

// TestMoveServerOnlyItselfOrByAServer: a node may move its own raft
// entry; moving another's needs the server role.
func TestMoveServerOnlyItselfOrByAServer(t *testing.T) {
	laptop := trust.Identity{Name: "laptop", Role: trust.RoleNode}
	srv := trust.Identity{Name: "s1", Role: trust.RoleServer}
	if err := authorizeMove(laptop, "laptop"); err != nil {
		t.Errorf("a node moving itself: %v", err)
	}
	if err := authorizeMove(laptop, "s2"); err == nil {
		t.Error("a node moved a server's raft entry")
	}
	if err := authorizeMove(srv, "s2"); err != nil {
		t.Errorf("a server forwarding a peer's move: %v", err)
	}
}
