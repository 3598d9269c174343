package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

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
