package subagent

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/runtime"
)

var childCaps = []string{"read", "write", "edit", "shell", "grep", "glob", "mcp__fs__write", ToolAgent, ToolHandoff}

// ceilings runs parent and child grants through a real runtime and
// returns each task's ceiling per capability.
func ceilings(t interface{ Fatal(...any) }, parent []runtime.Grant, limits []runtime.Limit, p Profile) (map[string]runtime.Level, map[string]runtime.Level) {
	rt, err := runtime.New(runtime.Config{Clock: runtime.NewFakeClock(), Ledger: runtime.NewMemLedger(), Key: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	var caps []runtime.Capability
	for _, c := range childCaps {
		caps = append(caps, runtime.Capability{Name: c, Kind: runtime.KindTool, Provider: "core", Core: true})
	}
	if _, err := rt.SetCatalog("c", caps); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"parent", "child"} {
		if err := rt.OpenSession(s, runtime.SessionConfig{Catalog: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	pv, err := rt.Start("parent", runtime.Request{Text: "p", Grants: parent})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range limits {
		_ = rt.Reduce(pv.ID, l.Capability, l.Level, "test")
	}
	pg, _ := rt.Grants(pv.ID)
	cv, err := rt.Start("child", runtime.Request{Text: "c", Grants: ChildGrants(pg, childCaps, p)})
	if err != nil {
		t.Fatal(err)
	}
	cg, _ := rt.Grants(cv.ID)
	lv := func(g runtime.GrantsView) map[string]runtime.Level {
		out := map[string]runtime.Level{}
		for _, h := range g.Ceiling {
			l, _ := runtime.ParseLevel(h.Level)
			out[h.Capability] = l
		}
		return out
	}
	return lv(pg), lv(cg)
}

func TestExplorerCannotWriteUnderAFullParent(t *testing.T) {
	pc, cc := ceilings(t, []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}, nil, Builtins()[ProfileExplorer])
	for _, w := range []string{"write", "edit", "shell", "mcp__fs__write", ToolAgent} {
		if cc[w] != runtime.LevelNone {
			t.Fatalf("explorer holds %s at %v", w, cc[w])
		}
	}
	if cc["read"] != runtime.Execute || cc[ToolHandoff] != runtime.Execute || pc["write"] != runtime.Execute {
		t.Fatalf("parent %v child %v", pc, cc)
	}
}

// TestPropertyChildNeverExceedsParent: for any parent grants, reductions
// and profile, the child's ceiling on every capability but handoff is at
// most the parent's, and none on what the profile leaves out.
func TestPropertyChildNeverExceedsParent(t *testing.T) {
	names := append([]string{"*", "mcp__*", "re?d", "e*"}, childCaps...)
	rapid.Check(t, func(t *rapid.T) {
		var gs []runtime.Grant
		for range rapid.IntRange(0, 5).Draw(t, "grants") {
			g := runtime.Grant{Level: runtime.Level(rapid.IntRange(1, 4).Draw(t, "level")), Capability: rapid.SampledFrom(names).Draw(t, "cap")}
			if g.Level == runtime.Execute && rapid.Bool().Draw(t, "match") {
				g.Match = "git *"
			}
			gs = append(gs, g)
		}
		var ls []runtime.Limit
		for range rapid.IntRange(0, 3).Draw(t, "limits") {
			ls = append(ls, runtime.Limit{Capability: rapid.SampledFrom(names).Draw(t, "lcap"), Level: runtime.Level(rapid.IntRange(0, 3).Draw(t, "llevel"))})
		}
		p := rapid.SampledFrom([]Profile{Builtins()[ProfileExplorer], Builtins()[ProfileImplementer], {Name: "x", Tools: []string{"w*", "read"}}}).Draw(t, "profile")
		pc, cc := ceilings(t, gs, ls, p)
		for _, c := range childCaps {
			if c == ToolHandoff {
				continue
			}
			if cc[c] > pc[c] {
				t.Fatalf("%s: child %v over parent %v", c, cc[c], pc[c])
			}
			if !p.Allows(c) && cc[c] != runtime.LevelNone {
				t.Fatalf("%s: profile %s leaves it out, child holds %v", c, p.Name, cc[c])
			}
		}
	})
}

func TestSystemOfCarriesProfileAndHandoffRuleOnly(t *testing.T) {
	s := SystemOf(Builtins()[ProfileReviewer])
	if !strings.Contains(s, "You are a reviewer") || !strings.Contains(s, "handoff tool") {
		t.Fatal(s)
	}
}
