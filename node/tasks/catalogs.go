package tasks

import (
	"strings"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/runtime"
)

// setAgentCatalogs publishes one catalog per agent, from what each hook
// adapter declares (adapter.Cataloger), and the generic catalog for
// drivers harn does not know.
func setAgentCatalogs(rt *runtime.Runtime) error {
	for _, n := range append(all.Names(), all.GenericCatalog) {
		tools, ok := all.Catalog(n)
		if !ok {
			continue
		}
		if _, err := rt.SetCatalog(n, capabilities(n, tools)); err != nil {
			return err
		}
	}
	return nil
}

// capabilities turns an agent's declared tools into runtime capabilities:
// every one is core (the agent loads its own schemas) and has no contract
// hash (the agent owns its schemas); a tool that does not mutate is
// read-only.
func capabilities(agent string, tools []adapter.ToolSpec) []runtime.Capability {
	out := make([]runtime.Capability, 0, len(tools))
	for _, t := range tools {
		c := runtime.Capability{Name: t.Name, Kind: runtime.KindTool, Provider: agent, ReadOnly: !t.Mutates,
			Core: true, Subject: subjectOf(t.Subject)}
		if strings.HasPrefix(t.Name, "mcp__") {
			c.Provider = "mcp"
		}
		out = append(out, c)
	}
	return out
}

func subjectOf(s adapter.Subject) runtime.Subject {
	switch s {
	case adapter.SubjectCommand:
		return runtime.SubjectCommand
	case adapter.SubjectPath:
		return runtime.SubjectPath
	case adapter.SubjectText:
		return runtime.SubjectText
	}
	return runtime.SubjectNone
}

// catalogOf is the catalog name of an agent's own tools: a presence agent
// name or an --exec driver's (all.CatalogOf). An agent without a declared
// catalog gets the generic one.
func catalogOf(agent string) string { return all.CatalogOf(agent) }
