package wire

import (
	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/raftstore/raftwire"
)

// Coordination actions (the Coord RPC's op).
const (
	CoordRelease = "release" // drop a session's claims (named paths, or all)
	CoordClaims  = "claims"  // list a session's claims
	CoordCheck   = "check"   // which of these paths other live sessions hold
	CoordEnd     = "end"     // end a session with session.end, on its node
	CoordPing    = "ping"    // is the session's agent process alive, asked of its node
)

// ReasonOperator is the session.end reason of `harn agents end` without
// --reason.
const ReasonOperator = "operator"

// CoordBody is the body of every coordination action; each op reads its
// fields.
type CoordBody struct {
	// Session is an id, unique prefix or name.
	Session string `json:"session"`
	// Claims names what to release or check, by repository.
	Claims []claimwire.Request `json:"claims,omitempty"`
	// All (release) drops every claim of the session.
	All bool `json:"all,omitempty"`
	// Reason (end) is session.end's reason ("" = operator).
	Reason string `json:"reason,omitempty"`
	// By (end) names who asked, for the node's log.
	By string `json:"by,omitempty"`
}

// CoordResult answers a coordination action.
type CoordResult struct {
	Session string `json:"session"`
	Node    string `json:"node,omitempty"`
	// Claims: the session's claims (claims), or those released (release).
	Claims []raftwire.Claim `json:"claims,omitempty"`
	// Holders: the conflicting claims (check); Mode is the node's claims
	// mode.
	Holders []claimwire.Holder `json:"holders,omitempty"`
	Mode    string             `json:"mode,omitempty"`
	// Ended (end): the session is ended; Already: it was before.
	Ended   bool `json:"ended,omitempty"`
	Already bool `json:"already,omitempty"`
	// Alive (ping): the agent process exists; PID is it (0: not known).
	Alive bool `json:"alive,omitempty"`
	PID   int  `json:"pid,omitempty"`
	// Hosted (ping): a runtime session of the node itself (agent harn);
	// PID is then the node's.
	Hosted bool `json:"hosted,omitempty"`
}
