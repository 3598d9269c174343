// Package claimapi holds the claims' values on node/api's wire, one function each
// way: its room is the conversion the node and the whole client need, apart
// from claimwire so that the hook links claimwire without node/api.
package claimapi

import (
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/raftstore/raftwire"
)

// The claims' values on the wire (node/api): one function each way.

// ToAPI is rs on the wire.
func ToAPI(rs []claimwire.Request) []*api.PathClaim {
	var out []*api.PathClaim
	for _, r := range rs {
		out = append(out, &api.PathClaim{Session: r.Session, Repo: r.Repo, Paths: r.Paths, Phase: r.Phase, Abs: r.Abs})
	}
	return out
}

// FromAPI reads claim requests from the wire.
func FromAPI(rs []*api.PathClaim) []claimwire.Request {
	var out []claimwire.Request
	for _, r := range rs {
		out = append(out, claimwire.Request{Session: r.GetSession(), Repo: r.GetRepo(), Paths: r.GetPaths(), Phase: r.GetPhase(), Abs: r.GetAbs()})
	}
	return out
}

// HoldersToAPI is hs on the wire (Ended stays on the node).
func HoldersToAPI(hs []claimwire.Holder) []*api.ClaimHolder {
	var out []*api.ClaimHolder
	for _, h := range hs {
		out = append(out, &api.ClaimHolder{Path: h.Path, Session: h.Session, Name: h.Name, Agent: h.Agent,
			Task: h.Task, Node: h.Node, Unreachable: h.Unreachable})
	}
	return out
}

// HoldersFromAPI reads holders from the wire.
func HoldersFromAPI(hs []*api.ClaimHolder) []claimwire.Holder {
	var out []claimwire.Holder
	for _, h := range hs {
		out = append(out, claimwire.Holder{Path: h.GetPath(), Session: h.GetSession(), Name: h.GetName(), Agent: h.GetAgent(),
			Task: h.GetTask(), Node: h.GetNode(), Unreachable: h.GetUnreachable()})
	}
	return out
}

// RegistryClaimsToAPI is the registry's claims cs on the wire.
func RegistryClaimsToAPI(cs []raftwire.Claim) []*api.RegistryClaim {
	var out []*api.RegistryClaim
	for _, c := range cs {
		out = append(out, &api.RegistryClaim{Repo: c.Repo, Path: c.Path, SessionId: c.SessionID, Node: c.Node,
			Ts: api.NewTime(c.TS), Index: c.Index})
	}
	return out
}

// RegistryClaimsFromAPI reads the registry's claims from the wire.
func RegistryClaimsFromAPI(cs []*api.RegistryClaim) []raftwire.Claim {
	var out []raftwire.Claim
	for _, c := range cs {
		out = append(out, raftwire.Claim{Repo: c.GetRepo(), Path: c.GetPath(), SessionID: c.GetSessionId(),
			Node: c.GetNode(), TS: c.GetTs().AsTime(), Index: c.GetIndex()})
	}
	return out
}
