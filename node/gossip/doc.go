// Package gossip is the node's presence gossip: what a node tells the mesh
// about its sessions and what it keeps of what the others tell it.
//
// It owns the gossiped entry (Entry) and its delta encoding, a node's full
// presence blob (Blob) for push/pull, the table of remote presence (Table),
// the presence digest that anti-entropy compares (Digest), the publisher
// that dedups and versions this node's broadcasts (Publisher), and the
// adapter that decodes what peers send (Handler, a mesh.Handler). None of
// it knows the node: its needs are the small interfaces and funcs declared
// here.
package gossip
