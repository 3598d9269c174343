package cluster

import (
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/raftstore"
)

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
