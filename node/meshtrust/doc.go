// Package meshtrust is the room of the mesh's trust as the registry carries
// it: a node's certificate at start (its own lone CA, or a join with a
// token), the TLS of raft and the cluster gRPC, certificate renewal, the
// join tokens, issued certificates, revocations and trusted CAs in the
// registry's key-value space, CA rotation, the signer of presence gossip,
// and the registry's write authority (which node may make which write).
// The certificate and token machinery itself is node/trust's; this room
// wires it to the registry through the cluster's Host.
package meshtrust
