package daemon

import (
	"testing"

	"github.com/harn-dev/harn/node/api/wire"
)

// TestJoinHintNamesTheRole: the printed join command carries --server for
// a server token only, the address given, --join-rpc when the gRPC port
// is not the gossip port plus 2, and the token itself.
func TestJoinHintNamesTheRole(t *testing.T) {
	srv := joinHint(wire.TokenCreated{Token: "harn1.abc", Role: "server"}, "10.0.0.5:7810", "10.0.0.5:7812")
	if srv != "harn node --server --join 10.0.0.5:7810 --join-token harn1.abc" {
		t.Errorf("server token: %q", srv)
	}
	nd := joinHint(wire.TokenCreated{Token: "harn1.abc", Role: "node"}, "[fd00::1]:7710", "[fd00::1]:9000")
	if nd != "harn node --join '[fd00::1]:7710' --join-rpc '[fd00::1]:9000' --join-token harn1.abc" {
		t.Errorf("node token: %q", nd)
	}
}
