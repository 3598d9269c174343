// Package raftwire holds the registry's rows that cross the wire to
// clients: a held write claim and a raft server. They live apart from
// raftstore so that a client decodes them without linking raft.
package raftwire

import "time"

// Claim is one held write claim.
type Claim struct {
	Repo      string    `json:"repo"`
	Path      string    `json:"path"`
	SessionID string    `json:"session_id"`
	Node      string    `json:"node,omitempty"`
	TS        time.Time `json:"ts,omitzero"`
	// Index is the log entry that gave the claim.
	Index uint64 `json:"index"`
}

// Server is one member of the registry's raft configuration.
type Server struct {
	ID    string `json:"id"`
	Addr  string `json:"addr"`
	Voter bool   `json:"voter"`
}
