package runtime

import (
	"slices"
	"sort"
)

// Overrides are the global switches that override every task's snapshot:
// revoked capability name patterns and disabled providers.
type Overrides struct {
	Revoked  []string `json:"revoked,omitempty"`
	Disabled []string `json:"disabled_providers,omitempty"`
}

// Overrides returns the global switches now, sorted.
func (rt *Runtime) Overrides() Overrides {
	g := rt.global.Load()
	o := Overrides{Revoked: slices.Clone(g.revoked)}
	for p, off := range g.disabled {
		if off {
			o.Disabled = append(o.Disabled, p)
		}
	}
	sort.Strings(o.Revoked)
	sort.Strings(o.Disabled)
	return o
}

// SetOverrides makes the global switches exactly o (the node applies the
// mesh registry's set this way, so that every node converges on the same
// switches) and records each change, with by, in the ledger of every task
// that has not ended. It returns the changes it recorded: revoke, restore,
// disable or enable records, one per name.
func (rt *Runtime) SetOverrides(o Overrides, by string) []Record {
	return rt.SetOverridesBy(o, func(RecordKind, string) string { return by })
}

// SetOverridesBy is SetOverrides where byOf names who made each change
// (by its record kind and the capability pattern or provider).
func (rt *Runtime) SetOverridesBy(o Overrides, byOf func(kind RecordKind, name string) string) []Record {
	rt.gmu.Lock()
	g := rt.global.Load()
	var changes []Record
	want := map[string]bool{}
	for _, p := range o.Revoked {
		want[p] = true
		if !slices.Contains(g.revoked, p) {
			changes = append(changes, Record{Kind: RecRevoke, Capability: p, By: clipBy(byOf(RecRevoke, p))})
		}
	}
	for _, p := range g.revoked {
		if !want[p] {
			changes = append(changes, Record{Kind: RecRestore, Capability: p, By: clipBy(byOf(RecRestore, p))})
		}
	}
	off := map[string]bool{}
	for _, p := range o.Disabled {
		off[p] = true
		if !g.disabled[p] {
			changes = append(changes, Record{Kind: RecProviderOff, Status: p, By: clipBy(byOf(RecProviderOff, p))})
		}
	}
	for p, was := range g.disabled {
		if was && !off[p] {
			changes = append(changes, Record{Kind: RecProviderOn, Status: p, By: clipBy(byOf(RecProviderOn, p))})
		}
	}
	if len(changes) == 0 {
		rt.gmu.Unlock()
		return nil
	}
	n := g.clone()
	n.revoked = nil
	for p := range want {
		n.revoked = append(n.revoked, p)
	}
	sort.Strings(n.revoked)
	n.disabled = off
	rt.global.Store(n)
	rt.gmu.Unlock()
	sort.Slice(changes, func(i, j int) bool {
		if changes[i].Kind != changes[j].Kind {
			return changes[i].Kind < changes[j].Kind
		}
		return changes[i].Capability+changes[i].Status < changes[j].Capability+changes[j].Status
	})
	rt.recordLive(changes)
	return changes
}

// recordLive appends rs to the ledger of every task that has not ended.
func (rt *Runtime) recordLive(rs []Record) {
	rt.mu.RLock()
	live := make([]*task, 0, len(rt.tasks))
	for _, t := range rt.tasks {
		live = append(live, t)
	}
	rt.mu.RUnlock()
	sort.Slice(live, func(i, j int) bool { return live[i].id < live[j].id })
	for _, t := range live {
		t.s.mu.Lock()
		if t.state != StateTerminal {
			for _, r := range rs {
				rt.recLog(t, r)
			}
		}
		t.s.mu.Unlock()
	}
}
