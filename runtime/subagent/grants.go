package subagent

import (
	"strings"

	"github.com/harn-dev/harn/runtime"
)

// ChildGrants are a child's grants: at most its parent's, reduced by its
// profile. For every capability of the child's catalog (caps) that the
// profile allows, each parent grant that matches it becomes an exact
// grant on it (its input pattern and confirmation kept), capped by the
// parent's reductions (limits); the handoff tool is always executable.
// The agent tool is never granted: children do not fan out.
func ChildGrants(parent runtime.GrantsView, caps []string, p Profile) []runtime.Grant {
	out := []runtime.Grant{{Level: runtime.Execute, Capability: ToolHandoff}}
	for _, c := range caps {
		if c == ToolHandoff || !p.Allows(c) {
			continue
		}
		ceiling := runtime.Execute
		for _, l := range parent.Limits {
			if nameMatch(l.Capability, c) {
				ceiling = min(ceiling, l.Level)
			}
		}
		for _, g := range parent.Grants {
			if !nameMatch(g.Capability, c) {
				continue
			}
			lvl := min(g.Level, ceiling)
			if lvl == runtime.LevelNone {
				continue
			}
			ng := runtime.Grant{Level: lvl, Capability: c}
			if lvl == runtime.Execute {
				ng.Match, ng.Confirm = g.Match, g.Confirm
			} else if g.Match != "" {
				continue // a pattern-bound grant capped below execute gives nothing beyond the others
			}
			out = append(out, ng)
		}
	}
	return out
}

// CapabilityMatch reports whether a capability pattern (a reduction's,
// a grant's) covers the capability name, as the runtime matches it.
func CapabilityMatch(pattern, name string) bool { return nameMatch(pattern, name) }

// nameMatch is the runtime's capability pattern match: exact, or * for
// any run of characters and ? for one in a pattern that has a *.
// A pattern without * is a literal name (as in the runtime).
func nameMatch(pattern, name string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == name
	}
	return globStar(pattern, name)
}

func globStar(pattern, name string) bool {
	if pattern == "" {
		return name == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(name); i++ {
			if globStar(pattern[1:], name[i:]) {
				return true
			}
		}
		return false
	case '?':
		return name != "" && globStar(pattern[1:], name[1:])
	}
	return name != "" && name[0] == pattern[0] && globStar(pattern[1:], name[1:])
}

// SystemOf is a child's system prompt: its profile's prompt and the rule
// of the handoff. The repository's instructions reach the child once,
// from its context lane (forked at its parent's system prefix and read
// again in its own directory at its first task), not here; the parent's
// transcript never does.
func SystemOf(p Profile) string {
	return p.Prompt + "\n\nYou are a subagent: you see only your brief. When the work is done, or cannot go on, call the handoff tool " +
		"once with status, changes, verification and unresolved, then end your turn. The parent receives only the handoff."
}
