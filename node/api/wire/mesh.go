package wire

import "github.com/harn-dev/harn/raftstore/raftwire"

// MemberView is one mesh member as `harn mesh members` shows it.
type MemberView struct {
	Name   string `json:"name"`
	Addr   string `json:"addr"`
	Status string `json:"status"`
	Role   string `json:"role"`
	Since  string `json:"since,omitempty"`
	RPC    string `json:"rpc_addr,omitempty"`
	Raft   string `json:"raft_addr,omitempty"`
}

// RaftView is the registry's Raft state as `harn mesh raft` shows it.
type RaftView struct {
	Leader      string       `json:"leader"`
	Term        uint64       `json:"term"`
	CommitIndex uint64       `json:"commit_index"`
	Applied     uint64       `json:"applied_index"`
	State       string       `json:"state"`
	Servers     []RaftServer `json:"servers"`
	Stale       bool         `json:"stale"`
	LastContact string       `json:"last_contact,omitempty"`
}

// RaftServer is one server of the raft configuration as `harn mesh raft`
// shows it. Stale marks a server whose address in the configuration
// differs from the raft address it advertises in the mesh (Advertises):
// peers dial it where it no longer listens.
type RaftServer struct {
	raftwire.Server
	Advertises string `json:"advertises,omitempty"`
	Stale      bool   `json:"stale"`
}
