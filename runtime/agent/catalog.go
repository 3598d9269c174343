package agent

import (
	"strings"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent/tools"
)

// Catalog is the catalog name of harn sessions.
const Catalog = "harn"

// Capabilities turns a tool box's specs into the runtime's catalog: the
// contract hash is the spec's, a tool that does not mutate is read-only,
// core and discovery tools are loaded at task start, and the tokens are
// the estimate of the tool's schema in a request.
func Capabilities(specs []tools.Spec) []runtime.Capability {
	out := make([]runtime.Capability, 0, len(specs))
	for _, s := range specs {
		c := runtime.Capability{Name: s.Name, Kind: runtime.KindTool, Description: s.Description, ContractHash: s.Hash,
			Provider: s.Provider, ReadOnly: !s.Mutating, Core: s.Provider == "core" || s.Provider == "harn",
			Tokens: Tokens(s.Name) + Tokens(s.Description) + Tokens(string(s.Schema)) + perMessage}
		switch {
		case s.Name == "shell":
			c.Subject = runtime.SubjectCommand
		case strings.Contains(string(s.Schema), `"path"`):
			c.Subject = runtime.SubjectPath
		}
		out = append(out, c)
	}
	return out
}
