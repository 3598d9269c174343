// Package trust is the mesh's trust room: the mesh CA and its rotation, node
// identities carried in certificates, join tokens that pin the CA, the join
// and renewal handshake, the mutual-TLS configurations for the raft and
// cluster gRPC ports, revocation, the authority checks that follow from a
// caller's identity, and the checks on local secret files.
//
// It knows nothing of sessions, gossip or raft: the node wires it in. See
// DESIGN.md in this folder and docs/security.md.
package trust
