package cli

import (
	"fmt"

	"github.com/harn-dev/harn/cli/install"
)

// checkInstructions checks, for each agent whose hooks are installed in a
// scope, that the scope's instruction file holds harn's current region:
// absent, of another version, or edited is a finding (drift).
func checkInstructions(e doctorEnv) []check {
	var out []check
	for _, agent := range install.Agents() {
		for _, scope := range []string{install.ScopeUser, install.ScopeProject} {
			o := install.Options{Agent: agent, Scope: scope, Home: e.home, ProjectDir: e.wd, Getenv: e.getenv}
			if st, err := install.Inspect(o); err != nil || len(st.Hooks) == 0 {
				continue // no hooks here: the instructions are not expected
			}
			name, fix := "instructions "+agent, "harn hook install "+agent
			if scope == install.ScopeProject {
				name, fix = name+" (project)", fix+" --scope project"
			}
			st, err := install.InspectInstructions(o)
			switch {
			case err != nil:
				out = append(out, check{name, checkFinding, err.Error(), "fix the file, then " + fix})
			case !st.Present:
				out = append(out, check{name, checkFinding, "harn's instructions are not in " + st.Path, fix})
			case st.Version != install.InstructionsVersion:
				out = append(out, check{name, checkFinding, fmt.Sprintf("drift: %s holds harn's instructions v%d, this harn writes v%d", st.Path, st.Version, install.InstructionsVersion), fix})
			case !st.Current:
				out = append(out, check{name, checkFinding, "drift: harn's region in " + st.Path + " was edited", fix + " (your text outside the region is kept)"})
			default:
				out = append(out, check{name, checkOK, fmt.Sprintf("v%d in %s", st.Version, st.Path), ""})
			}
		}
	}
	return out
}
