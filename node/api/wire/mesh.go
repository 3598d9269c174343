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
	Leader      string            `json:"leader"`
	Term        uint64            `json:"term"`
	CommitIndex uint64            `json:"commit_index"`
	Applied     uint64            `json:"applied_index"`
	State       string            `json:"state"`
	Servers     []raftwire.Server `json:"servers"`
	Stale       bool              `json:"stale"`
	LastContact string            `json:"last_contact,omitempty"`
}
