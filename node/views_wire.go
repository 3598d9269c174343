package node

import (
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/raftstore"
)

// The node's views on the wire (node/api): one function each way per
// type. The client prints the domain value (its JSON is the CLI's --json
// view), the wire carries the message.

// RecordToAPI is a registry record on the wire.
func RecordToAPI(r *raftstore.Record) *api.RegistryRecord {
	return &api.RegistryRecord{SessionId: r.SessionID, ParentSessionId: r.ParentSessionID, Node: r.Node,
		Agent: r.Agent, Name: r.Name, Task: r.Task, TaskState: r.TaskState, BlockerReason: r.BlockerReason,
		LifecycleReason: r.LifecycleReason, Ended: r.Ended, EndedAt: api.NewTime(r.EndedAt), EndReason: r.EndReason,
		Activity: r.Activity, ActivityUpdatedAt: api.NewTime(r.ActivityAt), StartedAt: api.NewTime(r.StartedAt),
		UpdatedAt: api.NewTime(r.UpdatedAt), Index: r.Index,
		Clocks: &api.RecordClocks{Identity: api.NewTime(r.Clocks.Identity), Task: api.NewTime(r.Clocks.Task),
			Lifecycle: api.NewTime(r.Clocks.Lifecycle), Activity: api.NewTime(r.Clocks.Activity),
			End: api.NewTime(r.Clocks.End)}}
}

// RecordFromAPI reads a registry record from the wire.
func RecordFromAPI(r *api.RegistryRecord) raftstore.Record {
	c := r.GetClocks()
	return raftstore.Record{SessionID: r.GetSessionId(), ParentSessionID: r.GetParentSessionId(), Node: r.GetNode(),
		Agent: r.GetAgent(), Name: r.GetName(), Task: r.GetTask(), TaskState: r.GetTaskState(),
		BlockerReason: r.GetBlockerReason(), LifecycleReason: r.GetLifecycleReason(), Ended: r.GetEnded(),
		EndedAt: r.GetEndedAt().AsTime(), EndReason: r.GetEndReason(), Activity: r.GetActivity(),
		ActivityAt: r.GetActivityUpdatedAt().AsTime(), StartedAt: r.GetStartedAt().AsTime(),
		UpdatedAt: r.GetUpdatedAt().AsTime(), Index: r.GetIndex(),
		Clocks: raftstore.Clocks{Identity: c.GetIdentity().AsTime(), Task: c.GetTask().AsTime(),
			Lifecycle: c.GetLifecycle().AsTime(), Activity: c.GetActivity().AsTime(), End: c.GetEnd().AsTime()}}
}

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
func WebhookToAPI(w *WebhookView) *api.Webhook {
	return &api.Webhook{Id: w.ID, Url: w.URL, Format: w.Format, On: w.On, Queued: int32(w.Queued), Sent: w.Sent,
		Failed: w.Failed, Dropped: w.Dropped, Retries: w.Retries, LastError: w.LastError, LastErrorAt: w.LastErrorAt}
}

// WebhookFromAPI is wire.WebhookFromAPI.
func WebhookFromAPI(w *api.Webhook) WebhookView { return wire.WebhookFromAPI(w) }

// DesktopToAPI is the desktop notifier's view on the wire.
func DesktopToAPI(d DesktopView) *api.Desktop {
	return &api.Desktop{Enabled: d.Enabled, Asked: d.Asked, Shown: d.Shown, Failed: d.Failed, Dropped: d.Dropped}
}

// DesktopFromAPI is wire.DesktopFromAPI.
func DesktopFromAPI(d *api.Desktop) DesktopView { return wire.DesktopFromAPI(d) }
