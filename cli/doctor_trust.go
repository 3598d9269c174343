package cli

import (
	"path/filepath"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/cli/install"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// checkHookTrust: an agent whose adapter is an adapter.HookTruster runs an
// installed hook only once the user trusted it; for each scope where harn's
// hooks are installed, the doctor reads the agent's records and reports
// what the adapter makes of them ("AGENT trust").
func checkHookTrust(e doctorEnv) []check {
	var out []check
	for _, agent := range install.Agents() {
		ad, _ := all.Lookup(agent)
		tr, ok := ad.(adapter.HookTruster)
		if !ok {
			continue
		}
		for _, scope := range []string{install.ScopeUser, install.ScopeProject} {
			st, err := install.Inspect(install.Options{Agent: agent, Scope: scope, Home: e.home, ProjectDir: e.wd, Getenv: e.getenv})
			if err != nil || len(st.Hooks) == 0 {
				continue
			}
			recPath := tr.TrustFile(e.home, e.getenv)
			b, _ := hook.ReadSmall(recPath)
			paths := []string{st.Path}
			if real, err := filepath.EvalSymlinks(st.Path); err == nil && real != st.Path {
				paths = append(paths, real)
			}
			places := make([]adapter.HookPlace, 0, len(st.Hooks))
			for _, h := range st.Hooks {
				places = append(places, adapter.HookPlace{Event: h.Event, Group: h.Group, Handler: h.Handler})
			}
			tc := tr.CheckTrust(b, recPath, paths, places)
			name := agent + " trust"
			if scope == install.ScopeProject {
				name += " (project)"
			}
			status := checkFinding
			if tc.OK {
				status = checkOK
			}
			out = append(out, check{name, status, tc.Detail, tc.Fix})
		}
	}
	return out
}
