package tasksvc

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/runtime"
)

// The operator's mesh-wide switches over the task runtimes: a global
// revocation of a capability and a disabled provider. In a mesh they live
// in the registry's key-value space, one key per switch, so that every
// node's runtimes apply the same set (each node follows the registry every
// TrustSync, and at once after its own write). A node without a mesh holds
// them in memory.

// The kinds of switches.
const (
	OverrideCapability = meshtrust.SwitchCapability
	OverrideProvider   = meshtrust.SwitchProvider
)

// ErrBadOverride refuses a switch with a bad kind or name.
var ErrBadOverride = meshtrust.ErrBadSwitch

// Reduce shrinks a task's ceiling on the node that owns the task.
func (s *TaskLocal) Reduce(ctx context.Context, req *api.ReduceRequest) (*api.TaskResponse, error) {
	a := tasks.Action{Op: tasks.OpReduce, Task: req.Task, Capability: req.Capability, Level: req.Level,
		Reason: req.Reason, By: operator.By(ctx, s.Node, "")}
	res, err := s.Route(ctx, req.Node, a)
	if err != nil {
		return nil, Status(err)
	}
	return res, nil
}

// Override sets or lifts a switch: in the registry when this node is in a
// mesh, else on this node's runtimes.
func (s *TaskLocal) Override(ctx context.Context, req *api.OverrideRequest) (*api.OverrideResponse, error) {
	if err := meshtrust.CheckSwitch(req.Kind, req.Name); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if len(req.Reason) > runtime.MaxReasonBytes {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("reason over %d bytes", runtime.MaxReasonBytes))
	}
	by := operator.By(ctx, s.Node, "")
	out := &api.OverrideResponse{Kind: req.Kind, Name: req.Name, Active: !req.Lift, By: by, Node: s.Node}
	rt := s.Tasks.Runtime()
	if s.Mesh() == nil {
		o := rt.Overrides()
		if req.Kind == OverrideCapability {
			o.Revoked = toggle(o.Revoked, req.Name, !req.Lift)
		} else {
			o.Disabled = toggle(o.Disabled, req.Name, !req.Lift)
		}
		out.Changed = len(rt.SetOverrides(o, by)) > 0
	} else {
		v := meshtrust.Switch{Kind: req.Kind, Name: req.Name, On: !req.Lift, By: by, Reason: req.Reason, At: s.Clock.Now().UTC()}
		b, _ := json.Marshal(v)
		key := meshtrust.SwitchKey(req.Kind, req.Name)
		prev, _ := meshtrust.Switches(s.Mesh().Registry().KVList(meshtrust.SwitchPrefix))[key]
		was := prev.On
		ctx, cancel := context.WithTimeout(ctx, s.ForwardTimeout)
		defer cancel()
		idx, err := s.Mesh().Apply(ctx, raftstore.KVCommand(raftstore.KVOp{Key: key, Value: b}))
		if err != nil {
			return nil, status.Error(codes.Unavailable, fmt.Sprintf("%s %s: the mesh registry did not take the switch (%v); retry when it has a leader", req.Kind, req.Name, err))
		}
		if err := s.Mesh().Registry().WaitForApplied(ctx, idx); err != nil {
			return nil, status.Error(codes.Unavailable, fmt.Sprintf("%s %s: written, but not yet applied here: %v", req.Kind, req.Name, err))
		}
		s.ApplySwitches(meshtrust.Switches(s.Mesh().Registry().KVList(meshtrust.SwitchPrefix)))
		out.Mesh, out.Changed = true, was != !req.Lift
	}
	o := rt.Overrides()
	out.Revoked, out.DisabledProviders = o.Revoked, o.Disabled
	s.Log.Info("task runtime switch", "kind", req.Kind, "name", req.Name, "on", !req.Lift, "by", by, "mesh", out.Mesh)
	return out, nil
}

func toggle(list []string, name string, on bool) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != name {
			out = append(out, x)
		}
	}
	if on {
		out = append(out, name)
	}
	return out
}

// ApplySwitches makes this node's runtimes apply the registry's switches
// (all, by key), each change recorded in the ledgers of the live tasks
// with who made it.
func (s *Service) ApplySwitches(all map[string]meshtrust.Switch) {
	h := s.Tasks
	if h == nil {
		return
	}
	var o runtime.Overrides
	for _, v := range all {
		if !v.On {
			continue
		}
		if v.Kind == OverrideCapability {
			o.Revoked = append(o.Revoked, v.Name)
		} else {
			o.Disabled = append(o.Disabled, v.Name)
		}
	}
	h.Runtime().SetOverridesBy(o, func(kind runtime.RecordKind, name string) string {
		k := OverrideCapability
		if kind == runtime.RecProviderOff || kind == runtime.RecProviderOn {
			k = OverrideProvider
		}
		if v, ok := all[meshtrust.SwitchKey(k, name)]; ok {
			return v.By
		}
		return "registry"
	})
}
