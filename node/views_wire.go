package node

import (
	"github.com/harn-dev/harn/node/alerts/notifysvc"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/raftstore"
)

// The node's views on the wire (node/api): one function each way per
// type. The client prints the domain value (its JSON is the CLI's --json
// view), the wire carries the message.

// RecordToAPI is a registry record on the wire.
func RecordToAPI(r *raftstore.Record) *api.RegistryRecord { return cluster.RecordToAPI(r) }

// RecordFromAPI reads a registry record from the wire.
func RecordFromAPI(r *api.RegistryRecord) raftstore.Record { return cluster.RecordFromAPI(r) }

// DiagnosticToAPI is a diagnostic on the wire.
func DiagnosticToAPI(d ledger.Diagnostic) *api.Diagnostic {
	return &api.Diagnostic{Seq: d.Seq, Ts: d.TS, Source: d.Source, Error: d.Error,
		InputBytes: int32(d.InputBytes), InputDigest: d.InputDigest}
}

// DiagnosticFromAPI is wire.DiagnosticFromAPI.
func DiagnosticFromAPI(d *api.Diagnostic) ledger.Diagnostic { return wire.DiagnosticFromAPI(d) }

// MemberToAPI is a member on the wire.
func MemberToAPI(m MemberView) *api.Member {
	return &api.Member{Name: m.Name, Addr: m.Addr, Status: m.Status, Role: m.Role, Since: m.Since,
		RpcAddr: m.RPC, RaftAddr: m.Raft}
}

// MemberFromAPI is wire.MemberFromAPI.
func MemberFromAPI(m *api.Member) MemberView { return wire.MemberFromAPI(m) }

// RaftToAPI is the raft state on the wire.
func RaftToAPI(v RaftView) *api.RaftStats {
	out := &api.RaftStats{Leader: v.Leader, Term: v.Term, CommitIndex: v.CommitIndex, AppliedIndex: v.Applied,
		State: v.State, Stale: v.Stale, LastContact: v.LastContact}
	for _, s := range v.Servers {
		out.Servers = append(out.Servers, &api.RaftServer{Id: s.ID, Addr: s.Addr, Voter: s.Voter, Advertises: s.Advertises, Stale: s.Stale})
	}
	return out
}

// RaftFromAPI is wire.RaftFromAPI.
func RaftFromAPI(v *api.RaftStats) RaftView { return wire.RaftFromAPI(v) }

// WebhookToAPI is a webhook's view on the wire.
var WebhookToAPI = notifysvc.WebhookToAPI

// WebhookFromAPI is wire.WebhookFromAPI.
func WebhookFromAPI(w *api.Webhook) WebhookView { return wire.WebhookFromAPI(w) }

// DesktopToAPI is the desktop notifier's view on the wire.
var DesktopToAPI = notifysvc.DesktopToAPI

// DesktopFromAPI is wire.DesktopFromAPI.
func DesktopFromAPI(d *api.Desktop) DesktopView { return wire.DesktopFromAPI(d) }
