// Package cluster is the node's room in the mesh: it joins the gossip mesh
// (mesh) and the registry (raftstore), and on them builds the node's
// presence gossip and its repair (node/gossip), the registry writer of its
// sessions (node/registry), the leader-forwarding path (node/forward), the
// cluster gRPC service (the registry's writes, reads and watch, membership,
// presence pulls; the node answers the calls about its own sessions and
// tasks through PeerService), the raft membership of the servers, and the
// gossip keyring. The mesh's trust is node/meshtrust's, which this room
// opens and hands the registry to (meshtrust.Host). The node reaches the
// cluster only through Cluster's methods, and the cluster reaches the node
// only through Local and PeerService.
package cluster
