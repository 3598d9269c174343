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

// WebhookToAPI is a webhook's view on the wire.
func WebhookToAPI(w *WebhookView) *api.Webhook {
	return &api.Webhook{Id: w.ID, Url: w.URL, Format: w.Format, On: w.On, Queued: int32(w.Queued), Sent: w.Sent,
		Failed: w.Failed, Dropped: w.Dropped, Retries: w.Retries, LastError: w.LastError, LastErrorAt: w.LastErrorAt}
}

// DesktopToAPI is the desktop notifier's view on the wire.
func DesktopToAPI(d DesktopView) *api.Desktop {
	return &api.Desktop{Enabled: d.Enabled, Asked: d.Asked, Shown: d.Shown, Failed: d.Failed, Dropped: d.Dropped}
}
