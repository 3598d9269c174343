// Package mesh is harn's membership and gossip room. Every harn node runs one
// Mesh: it finds the other nodes over hashicorp/memberlist, tells the node who
// joined, failed, left or came back (with the time it happened), and moves
// opaque, versioned blobs between nodes.
//
// mesh knows no sessions. It carries two kinds of payload for its Handler:
//
//   - deltas: small (key, version, bytes) messages that must fit one UDP
//     packet. They are gossiped epidemically (every node re-gossips a version
//     it has not seen), a newer version of a key invalidates an older one
//     still waiting in the queue, and in small meshes each delta is also sent
//     directly over a reliable stream to every other alive member, so that a
//     node missed by gossip does not wait for the next push/pull.
//   - the full state: the Handler's whole blob, exchanged on every push/pull
//     (and on join) for anti-entropy.
//
// A Mesh is built with New (no I/O), started with Start (binds, then joins its
// seeds and persisted peers in the background until one answers), left with
// Leave and stopped with Shutdown. See DESIGN.md in this folder for the
// choices behind it.
package mesh
