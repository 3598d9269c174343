package node

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/runtime"
)

// The operator's mesh-wide switches over the task runtimes: a global
// revocation of a capability and a disabled provider. In a mesh they live
// in the registry's key-value space, one key per switch, so that every
// node's runtimes apply the same set (each node follows the registry every
// TrustSync, and at once after its own write). A node without a mesh holds
// them in memory.

// kvOverridePrefix keys a switch: override/<kind>/<hex of the name>.
const kvOverridePrefix = "override/"

// The kinds of switches.
const (
	OverrideCapability = "capability"
	OverrideProvider   = "provider"
)

// ErrBadOverride refuses a switch with a bad kind or name.
var ErrBadOverride = errors.New("node: bad capability or provider switch")

// override is one switch's registry value. On false records a lifted
// switch (restore, enable), with who lifted it.
type override struct {
	Kind   string    `json:"kind"`
	Name   string    `json:"name"`
	On     bool      `json:"on"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

func overrideKey(kind, name string) string {
	return kvOverridePrefix + kind + "/" + hex.EncodeToString([]byte(name))
}

// checkOverride validates a switch's kind and name: a capability name or
// pattern, or a provider name; printable, no white space, at most 256
// bytes.
func checkOverride(kind, name string) error {
	if kind != OverrideCapability && kind != OverrideProvider {
		return fmt.Errorf("%w: kind %q; use capability or provider", ErrBadOverride, kind)
	}
	if name == "" || len(name) > 256 || !utf8.ValidString(name) || strings.ContainsAny(name, "()") ||
		strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("%w: %s name %q must be 1 to 256 printable bytes without spaces or parentheses", ErrBadOverride, kind, name)
	}
	return nil
}

// Reduce shrinks a task's ceiling on the node that owns the task.
func (s *localService) Reduce(ctx context.Context, req *api.ReduceRequest) (*api.TaskResponse, error) {
	a := tasks.Action{Op: tasks.OpReduce, Task: req.Task, Capability: req.Capability, Level: req.Level,
		Reason: req.Reason, By: s.n.operatorBy(ctx, "")}
	res, err := s.n.routeTask(ctx, req.Node, a)
	if err != nil {
		return nil, taskStatus(err)
	}
	return res, nil
}

// Override sets or lifts a switch: in the registry when this node is in a
// mesh, else on this node's runtimes.
func (s *localService) Override(ctx context.Context, req *api.OverrideRequest) (*api.OverrideResponse, error) {
	if err := checkOverride(req.Kind, req.Name); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if len(req.Reason) > runtime.MaxReasonBytes {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("reason over %d bytes", runtime.MaxReasonBytes))
	}
	n := s.n
	by := n.operatorBy(ctx, "")
	out := &api.OverrideResponse{Kind: req.Kind, Name: req.Name, Active: !req.Lift, By: by, Node: n.cfg.Name}
	rt := n.tasks.Runtime()
	if n.cl == nil {
		o := rt.Overrides()
		if req.Kind == OverrideCapability {
			o.Revoked = toggle(o.Revoked, req.Name, !req.Lift)
		} else {
			o.Disabled = toggle(o.Disabled, req.Name, !req.Lift)
		}
		out.Changed = len(rt.SetOverrides(o, by)) > 0
	} else {
		v := override{Kind: req.Kind, Name: req.Name, On: !req.Lift, By: by, Reason: req.Reason, At: n.cfg.Clock.Now().UTC()}
		b, _ := json.Marshal(v)
		was := n.cl.overrideOn(req.Kind, req.Name)
		ctx, cancel := context.WithTimeout(ctx, n.cfg.Cluster.ForwardTimeout)
		defer cancel()
		idx, err := n.cl.applyCommand(ctx, raftstore.KVCommand(raftstore.KVOp{Key: overrideKey(req.Kind, req.Name), Value: b}))
		if err != nil {
			return nil, status.Error(codes.Unavailable, fmt.Sprintf("%s %s: the mesh registry did not take the switch (%v); retry when it has a leader", req.Kind, req.Name, err))
		}
		if err := n.cl.waitApplied(ctx, idx); err != nil {
			return nil, status.Error(codes.Unavailable, fmt.Sprintf("%s %s: written, but not yet applied here: %v", req.Kind, req.Name, err))
		}
		n.cl.syncOverrides()
		out.Mesh, out.Changed = true, was != !req.Lift
	}
	o := rt.Overrides()
	out.Revoked, out.DisabledProviders = o.Revoked, o.Disabled
	n.log.Info("task runtime switch", "kind", req.Kind, "name", req.Name, "on", !req.Lift, "by", by, "mesh", out.Mesh)
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

// overrides reads the registry's switches (the local replica).
func (c *cluster) overrides() map[string]override {
	out := map[string]override{}
	for _, e := range c.store.KVList(kvOverridePrefix) {
		var v override
		if json.Unmarshal(e.Value, &v) != nil || checkOverride(v.Kind, v.Name) != nil || e.Key != overrideKey(v.Kind, v.Name) {
			continue
		}
		out[e.Key] = v
	}
	return out
}

func (c *cluster) overrideOn(kind, name string) bool {
	v, ok := c.overrides()[overrideKey(kind, name)]
	return ok && v.On
}

// syncOverrides makes this node's runtimes apply the registry's switches,
// each change recorded in the ledgers of the live tasks with who made it.
func (c *cluster) syncOverrides() {
	h := c.host()
	if h == nil {
		return
	}
	all := c.overrides()
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
		if v, ok := all[overrideKey(k, name)]; ok {
			return v.By
		}
		return "registry"
	})
}

// authorizeOverride admits a forwarded switch write: any verified mesh
// member may set a switch (it only takes authority away), in its own name
// (the value's by ends in "@" and the caller's node). Lifting a switch
// (restore, enable) gives authority back, so only the node that set it or
// a server may lift it. prev reads the switch's current value.
func authorizeOverride(caller trust.Identity, cmd raftstore.Command, prev func(key string) (override, bool)) (bool, error) {
	for _, o := range cmd.KV {
		if !strings.HasPrefix(o.Key, kvOverridePrefix) {
			return false, nil
		}
	}
	for _, o := range cmd.KV {
		var v override
		if o.Delete || o.IfAbsent || o.IfIndex != 0 || json.Unmarshal(o.Value, &v) != nil || o.Key != overrideKey(v.Kind, v.Name) {
			return true, &trust.RefusalError{Caller: caller, Err: trust.ErrNotOwner, Detail: "a switch is written whole, under its own key"}
		}
		if _, node := splitBy(v.By); node != caller.Name {
			return true, &trust.RefusalError{Caller: caller, Err: trust.ErrNotOwner, Detail: fmt.Sprintf("a switch written by node %q must name it (by %q)", caller.Name, v.By)}
		}
		if v.On || caller.Role == trust.RoleServer || prev == nil {
			continue
		}
		if was, ok := prev(o.Key); ok && was.On {
			if _, setter := splitBy(was.By); setter != caller.Name {
				return true, &trust.RefusalError{Caller: caller, Err: trust.ErrNotOwner,
					Detail: fmt.Sprintf("%s %q was set by %q: only that node or a server may lift it", v.Kind, v.Name, was.By)}
			}
		}
	}
	return true, nil
}
