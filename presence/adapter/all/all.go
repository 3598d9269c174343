// Package all is the registry of agent hook adapters, by the name used in
// `harn hook <name>`. It is the one place that lists the agents: the hook,
// `harn hook install`, the CLI's session lookup and the task runtime's
// catalogs find an agent here and ask its adapter (presence/adapter's
// optional roles); none of them names an agent.
//
// Adding an agent: write its adapter in presence/adapter/<agent> (see the
// presence/adapter doc comment for the roles it implements) and add one
// line to registry below. TestEveryRegisteredAdapterDeclaresItsRoles says
// what is missing.
package all

import (
	"encoding/json"
	"slices"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/claudecode"
	"github.com/harn-dev/harn/presence/adapter/codex"
	"github.com/harn-dev/harn/presence/adapter/cursor"
	"github.com/harn-dev/harn/presence/adapter/gemini"
	"github.com/harn-dev/harn/presence/adapter/internal/hookkit"
)

// registry lists the adapters. Its order is the order in which their
// session variables are read (SessionEnv).
var registry = []struct {
	name string
	new  func() adapter.Adapter
}{
	{claudecode.Name, claudecode.New},
	{codex.Name, codex.New},
	{codex.NotifyName, codex.NewNotify},
	{gemini.Name, gemini.New},
	{cursor.Name, cursor.New},
}

// Lookup returns the adapter named name.
func Lookup(name string) (adapter.Adapter, bool) {
	for _, r := range registry {
		if r.name == name {
			return r.new(), true
		}
	}
	return nil, false
}

// Names lists the adapter names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for _, r := range registry {
		out = append(out, r.name)
	}
	slices.Sort(out)
	return out
}

// Installable lists, sorted, the adapters whose hooks harn installs (an
// adapter.Installer with a settings file).
func Installable() []string {
	var out []string
	for _, n := range Names() {
		if s, ok := Install(n); ok && s.Settings != nil {
			out = append(out, n)
		}
	}
	return out
}

// Install returns the install spec of the adapter named name; ok is false
// for an unknown name or an adapter that is not an adapter.Installer.
func Install(name string) (adapter.InstallSpec, bool) {
	a, ok := Lookup(name)
	if !ok {
		return adapter.InstallSpec{}, false
	}
	i, ok := a.(adapter.Installer)
	if !ok {
		return adapter.InstallSpec{}, false
	}
	return i.Install(), true
}

// SessionEnv lists every agent's session variables (adapter.SessionEnver),
// in registry order.
func SessionEnv() []string {
	var out []string
	for _, r := range registry {
		if s, ok := r.new().(adapter.SessionEnver); ok {
			for _, k := range s.SessionEnv() {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// ExecExamples lists, in registry order, a task command line of each agent
// harn can run (adapter.Driven), for help text.
func ExecExamples() []string {
	var out []string
	for _, r := range registry {
		if d, ok := r.new().(adapter.Driven); ok {
			out = append(out, d.ExecExample())
		}
	}
	return out
}

// ReportsCallEnds reports whether the agent named name names each tool
// call's end (adapter.CallEnder).
func ReportsCallEnds(name string) bool {
	a, ok := Lookup(name)
	if !ok {
		return false
	}
	c, ok := a.(adapter.CallEnder)
	return ok && c.ReportsCallEnds()
}

// Host returns how a node hosts the agent named name in a terminal; ok is
// false for an unknown name or an adapter that is no adapter.Hoster.
func Host(name string) (adapter.HostSpec, bool) {
	a, ok := Lookup(name)
	if !ok {
		return adapter.HostSpec{}, false
	}
	h, ok := a.(adapter.Hoster)
	if !ok {
		return adapter.HostSpec{}, false
	}
	return h.Host(), true
}

// Hostable lists, sorted, the agents a node can host in a terminal.
func Hostable() []string {
	var out []string
	for _, n := range Names() {
		if _, ok := Host(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// Describe is what agent's call of tool asks, for the operator who
// approves it: its adapter's reading (adapter.Describer), or, for an
// agent no adapter describes, the common spellings (a "command" is a
// shell command; a "file_path" or "path" with content or old_string and
// new_string is a write).
func Describe(agent, tool string, input json.RawMessage) adapter.Asked {
	if a, ok := Lookup(agent); ok {
		if d, ok := a.(adapter.Describer); ok {
			return d.Describe(tool, input)
		}
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(input, &in) != nil {
		return adapter.Asked{}
	}
	spec := adapter.ToolSpec{Name: tool, Mutates: true}
	switch {
	case in["command"] != nil:
		spec.Subject = adapter.SubjectCommand
	case in["file_path"] != nil || in["path"] != nil || in["notebook_path"] != nil:
		spec.Subject = adapter.SubjectPath
	}
	return hookkit.Describe([]adapter.ToolSpec{spec}, tool, input)
}
