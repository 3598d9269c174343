package mesh

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Role says whether a node is a Raft voter.
type Role string

const (
	RoleServer  Role = "server"  // a Raft voter
	RoleReplica Role = "replica" // a non-voting Raft replica (a read replica)
	// RoleClient is every other node. A node of this landing holds no
	// raft log (it advertises no raft address); one of an earlier landing
	// was a non-voting replica and advertises one.
	RoleClient Role = "client"
)

// NodeMeta is what every member tells the others about itself. It travels
// in memberlist's node metadata, so it is encoded compactly and must stay
// within memberlist.MetaMaxSize (512 bytes).
type NodeMeta struct {
	Role     Role
	RaftAddr string
	RPCAddr  string
	HTTPAddr string
	Version  string
}

func (nm NodeMeta) validate() error {
	switch nm.Role {
	case "", RoleServer, RoleReplica, RoleClient:
		return nil
	}
	return fmt.Errorf("%w: Meta.Role %q is unknown; use %q, %q or %q", ErrConfig, nm.Role, RoleServer, RoleReplica, RoleClient)
}

// metaVersion is the first byte of an encoded NodeMeta.
const metaVersion = 1

// encode lays out: version, instance (8 bytes), role (0 none, 1 server,
// 2 client, 3 replica: a node of an earlier landing reads 3 as no role),
// then RaftAddr, RPCAddr, HTTPAddr and Version, each as a uvarint
// length and bytes. The instance is random per process: it tells a restarted
// node from the one before it (see leave intents).
func (nm NodeMeta) encode(instance uint64) []byte {
	b := make([]byte, 0, 16+len(nm.RaftAddr)+len(nm.RPCAddr)+len(nm.HTTPAddr)+len(nm.Version))
	b = append(b, metaVersion)
	b = binary.BigEndian.AppendUint64(b, instance)
	var role byte
	switch nm.Role {
	case RoleServer:
		role = 1
	case RoleClient:
		role = 2
	case RoleReplica:
		role = 3
	}
	b = append(b, role)
	for _, s := range []string{nm.RaftAddr, nm.RPCAddr, nm.HTTPAddr, nm.Version} {
		b = appendString(b, s)
	}
	return b
}

var errBadMeta = errors.New("malformed node meta")

// decodeMeta is the inverse of encode. Fields a newer version appends are
// ignored.
func decodeMeta(b []byte) (NodeMeta, uint64, error) {
	var nm NodeMeta
	if len(b) == 0 {
		return nm, 0, nil // a node without meta (not harn's): nothing known
	}
	if len(b) < 10 || b[0] < metaVersion {
		return nm, 0, errBadMeta
	}
	instance := binary.BigEndian.Uint64(b[1:9])
	switch b[9] {
	case 1:
		nm.Role = RoleServer
	case 2:
		nm.Role = RoleClient
	case 3:
		nm.Role = RoleReplica
	}
	r := reader{b: b[10:]}
	nm.RaftAddr = r.string()
	nm.RPCAddr = r.string()
	nm.HTTPAddr = r.string()
	nm.Version = r.string()
	if r.err != nil {
		return NodeMeta{}, 0, errBadMeta
	}
	return nm, instance, nil
}
