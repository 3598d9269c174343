// Package all is the registry of agent hook adapters, by the name used in
// `harn hook <name>`.
package all

import (
	"sort"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/claudecode"
	"github.com/harn-dev/harn/presence/adapter/codex"
	"github.com/harn-dev/harn/presence/adapter/cursor"
	"github.com/harn-dev/harn/presence/adapter/gemini"
)

var registry = map[string]func() adapter.Adapter{
	claudecode.Name:  claudecode.New,
	codex.Name:       codex.New,
	codex.NotifyName: codex.NewNotify,
	cursor.Name:      cursor.New,
	gemini.Name:      gemini.New,
}

// Lookup returns the adapter named name.
func Lookup(name string) (adapter.Adapter, bool) {
	f, ok := registry[name]
	if !ok {
		return nil, false
	}
	return f(), true
}

// Names lists the adapter names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// GenericCatalog is the catalog name of a driver harn does not know (a
// generic `--exec` command line): it may run any of the agents above.
const GenericCatalog = "generic"

// Catalog returns the tools of the agent named name: the adapter's own
// catalog, or for GenericCatalog the union of every adapter's (a tool
// that any agent says mutates is taken as mutating). ok is false for an
// unknown name or an adapter without a catalog.
func Catalog(name string) ([]adapter.ToolSpec, bool) {
	if name == GenericCatalog {
		return generic(), true
	}
	a, ok := Lookup(name)
	if !ok {
		return nil, false
	}
	c, ok := a.(adapter.Cataloger)
	if !ok {
		return nil, false
	}
	return c.Catalog(), true
}

func generic() []adapter.ToolSpec {
	var out []adapter.ToolSpec
	at := map[string]int{}
	for _, n := range Names() {
		tools, _ := Catalog(n)
		for _, t := range tools {
			i, seen := at[t.Name]
			if !seen {
				at[t.Name] = len(out)
				out = append(out, t)
				continue
			}
			if t.Mutates {
				out[i].Mutates = true
			}
			if out[i].Subject == adapter.SubjectNone {
				out[i].Subject = t.Subject
			}
		}
	}
	return out
}
