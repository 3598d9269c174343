package node

// MeshAddr is the "host:port" other nodes reach this node's gossip at (a
// seed for Join); "" without the mesh.
func (n *Node) MeshAddr() string {
	if n.cl == nil || n.cl.mesh == nil {
		return ""
	}
	return n.cl.mesh.LocalAddr()
}

// RaftAddr is the address the registry's Raft transport is bound to; ""
// without the mesh.
func (n *Node) RaftAddr() string {
	if n.cl == nil || n.cl.store == nil {
		return ""
	}
	return n.cl.store.Addr()
}

// RPCAddr is the address of the cluster gRPC service; "" without the mesh.
func (n *Node) RPCAddr() string {
	if n.cl == nil || n.cl.rpcLis == nil {
		return ""
	}
	return n.cl.rpcLis.Addr().String()
}
