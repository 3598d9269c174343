package runtime

import (
	"errors"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// authModel is what the property believes a task holds: its ceiling per
// capability (the grants, narrowed by every reduction) and the global
// switches (revoked capabilities, disabled providers).
type authModel struct {
	caps     map[string]Capability
	ceil     map[string]Level
	revoked  map[string]bool
	disabled map[string]bool
}

// effective is the most a capability may do now: its ceiling, or nothing
// while it is revoked or its provider is off.
func (m *authModel) effective(name string) Level {
	c := m.caps[name]
	if m.revoked[name] || m.disabled[c.Provider] {
		return LevelNone
	}
	return m.ceil[name]
}

var authInputs = map[string]string{"read_file": `{"path":"a"}`, "write_file": `{"path":"a"}`, "shell": `{"command":"ls"}`}

// TestAuthorityNeverExceedsTheCeiling is seed 000's rule: the effective
// authority at a call never exceeds the task's ceiling — its grants,
// narrowed by every reduction, and nothing while a capability is revoked
// or its provider disabled — for any interleaving of load, activate,
// reduce, revoke, steer and the end of a step. Loading a schema,
// activating a skill, steering and ending a step add no authority; a
// reduction above what a capability holds is refused.
func TestAuthorityNeverExceedsTheCeiling(t *testing.T) {
	levels := []Level{LevelNone, Discover, Inspect, Load, Execute}
	rapid.Check(t, func(t *rapid.T) {
		f := newFixture(t)
		m := &authModel{caps: map[string]Capability{}, ceil: map[string]Level{}, revoked: map[string]bool{}, disabled: map[string]bool{}}
		var names []string
		var grants []Grant
		for _, c := range testCatalog() {
			m.caps[c.Name] = c
			names = append(names, c.Name)
			l := rapid.SampledFrom(levels).Draw(t, "grant "+c.Name)
			if l != LevelNone {
				grants = append(grants, Grant{Level: l, Capability: c.Name})
			}
			if c.Kind == KindSkill {
				l = min(l, Activate)
			}
			m.ceil[c.Name] = l
		}
		if len(grants) == 0 {
			grants = []Grant{{Level: Discover, Capability: "orphan"}}
			m.ceil["orphan"] = Discover
		}
		providers := []string{"fs", "exec", "web", "skills"}
		task := f.start(t, "a", grants)
		run := f.next(t)
		pick := func(t *rapid.T) string { return rapid.SampledFrom(names).Draw(t, "cap") }
		calls := 0

		t.Repeat(map[string]func(*rapid.T){
			"load": func(t *rapid.T) {
				n := pick(t)
				if _, err := f.rt.Load(task, n); err == nil && m.effective(n) < Load {
					t.Fatalf("loaded %s holding %s", n, m.effective(n))
				}
			},
			"activate": func(t *rapid.T) {
				n := pick(t)
				if _, err := f.rt.Activate(task, n, rapid.Bool().Draw(t, "direct")); err == nil && m.effective(n) < Activate {
					t.Fatalf("activated %s holding %s", n, m.effective(n))
				}
			},
			"inspect": func(t *rapid.T) {
				n := pick(t)
				if _, err := f.rt.Inspect(task, n); err == nil && m.effective(n) < Inspect {
					t.Fatalf("inspected %s holding %s", n, m.effective(n))
				}
			},
			"discover": func(t *rapid.T) {
				es, err := f.rt.Discover(task)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range es {
					if m.effective(e.Name) < Discover {
						t.Fatalf("discovered %s holding %s", e.Name, m.effective(e.Name))
					}
				}
			},
			"reduce": func(t *rapid.T) {
				pattern := rapid.SampledFrom(append([]string{"*"}, names...)).Draw(t, "pattern")
				level := rapid.SampledFrom(levels).Draw(t, "level")
				refuse := false
				for _, n := range names {
					if nameMatch(pattern, n) && level > m.ceil[n] {
						refuse = true
					}
				}
				err := f.rt.Reduce(task, pattern, level, "")
				var ce *CeilingError
				switch {
				case refuse && !errors.As(err, &ce):
					t.Fatalf("reduce %s to %s above what it holds: %v, want a CeilingError", pattern, level, err)
				case !refuse && err != nil:
					t.Fatalf("reduce %s to %s: %v", pattern, level, err)
				case !refuse:
					for _, n := range names {
						if nameMatch(pattern, n) {
							m.ceil[n] = min(m.ceil[n], level)
						}
					}
				}
			},
			"revoke": func(t *rapid.T) {
				n := pick(t)
				f.rt.Revoke(n)
				m.revoked[n] = true
			},
			"restore": func(t *rapid.T) {
				n := pick(t)
				f.rt.Unrevoke(n)
				delete(m.revoked, n)
			},
			"provider": func(t *rapid.T) {
				p := rapid.SampledFrom(providers).Draw(t, "provider")
				on := rapid.Bool().Draw(t, "on")
				f.rt.SetProviderEnabled(p, on)
				m.disabled[p] = !on
			},
			"steer": func(t *rapid.T) {
				if _, err := f.rt.Steer(testSession, "steer "+strconv.Itoa(calls)); err != nil {
					t.Fatal(err)
				}
				if rapid.Bool().Draw(t, "take") {
					_, _ = run.Steers()
				}
			},
			"endStep": func(t *rapid.T) { _, _ = run.EndStep() },
			"call": func(t *rapid.T) {
				n := pick(t)
				calls++
				req := f.req(n, authInputs[n])
				req.ID = "c" + strconv.Itoa(calls)
				if req.Input == nil {
					req.Input = []byte(`{}`)
				}
				c, err := run.Begin(req)
				if err != nil {
					return
				}
				if m.effective(n) < Execute || m.caps[n].Kind != KindTool {
					t.Fatalf("call of %s ran holding %s", n, m.effective(n))
				}
				if err := c.End(OutcomeSucceeded, nil); err != nil {
					t.Fatal(err)
				}
			},
			"": func(t *rapid.T) {
				g, err := f.rt.Grants(task)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range g.Ceiling {
					if l, _ := ParseLevel(h.Level); l > m.ceil[h.Capability] {
						t.Fatalf("grants view: %s holds %s over its ceiling %s", h.Capability, h.Level, m.ceil[h.Capability])
					}
				}
			},
		})
	})
}
