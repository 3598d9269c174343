package hook

import (
	"path/filepath"
	"strings"

	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// claimRequests turns a hook's writes into claim requests, one per
// repository: the files its agent's adapter says the call writes
// (adapter.Planner.Writes: its claim.write events, or what the payload
// names), each made relative to its repository's top level. Paths outside
// any repository are not claimed. The lookup reads files only
// (gitinfo.go): no git process runs.
func ClaimRequests(agent string, in []byte, evs []presence.Event) []claimwire.Request {
	ad, _ := all.Lookup(agent)
	planner, ok := ad.(adapter.Planner)
	if !ok {
		return nil
	}
	w := planner.Writes(in, evs)
	session, paths := w.Session, w.Paths
	if session == "" || len(paths) == 0 {
		return nil
	}
	phase := claimwire.PhasePre
	if w.After {
		phase = claimwire.PhasePost
	}
	var out []claimwire.Request
	byRepo := map[string]int{}
	dirs := map[string]*GitInfo{}
	for _, abs := range paths {
		if !filepath.IsAbs(abs) {
			continue
		}
		dir := filepath.Dir(abs)
		info, seen := dirs[dir]
		if !seen {
			if gi, ok := RepoOf(dir); ok {
				info = &gi
			}
			dirs[dir] = info
		}
		if info == nil {
			continue
		}
		rel, err := filepath.Rel(info.Top, abs)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		repo := claimwire.RepoIdentity(info.Origin, info.Top)
		i, ok := byRepo[repo]
		if !ok {
			i = len(out)
			byRepo[repo] = i
			out = append(out, claimwire.Request{Session: session, Repo: repo, Phase: phase})
		}
		out[i].Paths = append(out[i].Paths, filepath.ToSlash(rel))
		out[i].Abs = append(out[i].Abs, abs)
	}
	return out
}
