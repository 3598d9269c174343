package wire

import "github.com/harn-dev/harn/node/api"

// The node's views onto the wire: each the inverse of its FromAPI.

// DiagnosticToAPI is a diagnostic on the wire.
func DiagnosticToAPI(d Diagnostic) *api.Diagnostic {
	return &api.Diagnostic{Seq: d.Seq, Ts: d.TS, Source: d.Source, Error: d.Error,
		InputBytes: int32(d.InputBytes), InputDigest: d.InputDigest}
}

// MemberToAPI is a member on the wire.
func MemberToAPI(m MemberView) *api.Member {
	return &api.Member{Name: m.Name, Addr: m.Addr, Status: m.Status, Role: m.Role, Since: m.Since,
		RpcAddr: m.RPC, RaftAddr: m.Raft}
}

// RaftToAPI is the raft state on the wire.
func RaftToAPI(v RaftView) *api.RaftStats {
	out := &api.RaftStats{Leader: v.Leader, Term: v.Term, CommitIndex: v.CommitIndex, AppliedIndex: v.Applied,
		State: v.State, Stale: v.Stale, LastContact: v.LastContact}
	for _, s := range v.Servers {
		out.Servers = append(out.Servers, &api.RaftServer{Id: s.ID, Addr: s.Addr, Voter: s.Voter, Advertises: s.Advertises, Stale: s.Stale})
	}
	return out
}
