package node

// MeshAddr is the "host:port" other nodes reach this node's gossip at (a
// seed for Join); "" without the mesh.
func (n *Node) MeshAddr() string {
	if n.cl == nil {
		return ""
	}
	return n.cl.gossipAddr()
}

// RaftAddr is the address the registry's Raft transport is bound to; ""
// without the mesh.
func (n *Node) RaftAddr() string {
	if n.cl == nil {
		return ""
	}
	return n.cl.raftAddr()
}

// RPCAddr is the address of the cluster gRPC service; "" without the mesh.
func (n *Node) RPCAddr() string {
	if n.cl == nil {
		return ""
	}
	return n.cl.rpcAddr()
}
