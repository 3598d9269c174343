package node

import (
	"testing"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/trust"
)

// TestTheContractNamesTrustsRoles: the client reads roles and the token
// lifetime from node/api (it links no node/trust); they are trust's.
func TestTheContractNamesTrustsRoles(t *testing.T) {
	if api.RoleServer != string(trust.RoleServer) || api.RoleNode != string(trust.RoleNode) || api.DefaultTokenTTL != trust.DefaultTokenTTL {
		t.Fatalf("api roles %q %q ttl %v; trust %q %q ttl %v", api.RoleServer, api.RoleNode, api.DefaultTokenTTL,
			trust.RoleServer, trust.RoleNode, trust.DefaultTokenTTL)
	}
}
