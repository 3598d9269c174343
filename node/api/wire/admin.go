package wire

import "time"

// Admin operations (AdminRequest.op).
const (
	AdminTokenCreate = "token.create"
	AdminTokenList   = "token.list"
	AdminTokenRevoke = "token.revoke"
	AdminKeyringList = "keyring.list"
	AdminKeyringOp   = "keyring.change"
	AdminRevokeNode  = "node.revoke"
)

// TokenCreateArgs are `harn token create`'s options.
type TokenCreateArgs struct {
	Server bool          `json:"server"`
	TTL    time.Duration `json:"ttl"`
	Uses   int           `json:"uses"`
}

// TokenCreated is a new token.
type TokenCreated struct {
	Token   string    `json:"join_token"`
	ID      string    `json:"id"`
	Role    string    `json:"role"`
	Expires time.Time `json:"expires"`
	Uses    int       `json:"uses,omitempty"`
	// JoinAddr is the gossip address the node that made the token
	// advertises, for the joining node's --join ("" when not known).
	JoinAddr string `json:"join_addr,omitempty"`
	// JoinRPC is that node's cluster gRPC address (--join-rpc).
	JoinRPC string `json:"join_rpc,omitempty"`
}

// KeyringChange is `harn keyring install|use|remove KEY`.
type KeyringChange struct {
	Op  string `json:"op"` // install, use, remove
	Key string `json:"key"`
}

// KeyringView is `harn keyring list`: the registry's keyring and the keys
// this node's gossip holds now (base64).
type KeyringView struct {
	Primary     string   `json:"primary"`
	Keys        []string `json:"keys"`
	NodePrimary string   `json:"node_primary"`
	NodeKeys    []string `json:"node_keys"`
}

// Revoked is what `harn mesh remove` revoked.
type Revoked struct {
	Node    string   `json:"node"`
	Serials []string `json:"serials"`
}

// Admin operations of a CA rotation.
const (
	AdminCARotate = "ca.rotate"
	AdminCAFinish = "ca.finish"
	AdminCAStatus = "ca.status"
)

// CAStatus is `harn mesh ca status`.
type CAStatus struct {
	// Roots are the trusted CAs' fingerprints, current first.
	Roots []string `json:"roots"`
	// Rotating: two CAs are trusted.
	Rotating bool `json:"rotating"`
	// OnCurrent: this node's certificate is from the current CA.
	OnCurrent bool `json:"on_current"`
	// Members lists, per recorded certificate that is still valid, the
	// node it names (nodes still on the old CA renew within a minute).
	Members map[string]bool `json:"members_on_current,omitempty"`
}

// MeshInit is what `harn mesh init` did.
type MeshInit struct {
	// Created says whether a new CA was made (false: the data dir had one).
	Created     bool   `json:"created"`
	Fingerprint string `json:"ca_fingerprint"`
	// Name is the server's node name the certificate was made for.
	Name  string `json:"name"`
	Token TokenCreated
}
