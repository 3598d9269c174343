package all

import (
	"slices"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/claudecode"
)

// GenericCatalog is the catalog name of a driver harn does not know (a
// generic `--exec` command line): it may run any of the agents above.
const GenericCatalog = "generic"

// RestoredCatalog is the catalog of a task read back from the ledger whose
// session this node no longer holds.
const RestoredCatalog = claudecode.Name

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

// CatalogOf is the catalog name of an agent's own tools, given a presence
// agent name ("gemini") or an --exec driver's ("claude", "codex",
// "generic"; adapter.Driven says which adapter a driver runs). An agent
// without a declared catalog gets the generic one.
func CatalogOf(agent string) string {
	for _, r := range registry {
		if d, ok := r.new().(adapter.Driven); ok && slices.Contains(d.Drivers(), agent) {
			agent = r.name
			break
		}
	}
	if _, ok := Catalog(agent); ok {
		return agent
	}
	return GenericCatalog
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
