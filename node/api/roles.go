package api

import "time"

// The roles a join token or certificate names on the wire (the role fields
// of TokenCreateRequest, TokenRecord and TokenCreated): node/trust's Role
// values, which TestTheContractNamesTrustsRoles keeps equal.
const (
	RoleServer = "server" // a raft voter
	RoleNode   = "node"   // every other member
)

// DefaultTokenTTL is a join token's default lifetime (node/trust's).
const DefaultTokenTTL = 24 * time.Hour
