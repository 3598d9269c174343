package runtime

import (
	"testing"
)

// The digest a successor receives names only what it may discover: never
// a tool of a provider disabled since the predecessor called it, whether
// the successor's catalog lists the tool by name (search, mcp__srv__pull)
// or under a pattern entry (mcp__github__issue under mcp__*). Disabling
// "mcp" turns off harn's own servers too (mcp:NAME).
func TestDigestNeverNamesAToolOfADisabledProvider(t *testing.T) {
	for _, off := range [][]string{{"web"}, {"mcp"}, {"mcp:srv"}, {"web", "mcp"}} {
		rt, err := New(Config{Clock: NewFakeClock(), Ledger: NewMemLedger(), Key: []byte("k"), Grace: testGrace, DefaultProfile: "full"})
		if err != nil {
			t.Fatal(err)
		}
		cat := []Capability{
			{Name: "read_file", Kind: KindTool, ContractHash: "h-read", Provider: "fs", ReadOnly: true, Core: true},
			{Name: "search", Kind: KindTool, ContractHash: "h-search", Provider: "web", ReadOnly: true, Core: true},
			{Name: "mcp__srv__pull", Kind: KindTool, ContractHash: "h-pull", Provider: "mcp:srv", Core: true},
			{Name: "mcp__*", Kind: KindTool, Provider: "mcp", Core: true},
		}
		gen, err := rt.SetCatalog("c", cat)
		if err != nil {
			t.Fatal(err)
		}
		all := []Grant{{Level: Execute, Capability: "*"}}
		if err := rt.OpenSession("s", SessionConfig{Catalog: "c", Workdir: "/w", Grants: all}); err != nil {
			t.Fatal(err)
		}
		a, _ := rt.Start("s", Request{Text: "a", Grants: all})
		for _, c := range []struct{ name, hash string }{{"read_file", "h-read"}, {"search", "h-search"}, {"mcp__srv__pull", "h-pull"}, {"mcp__github__issue", ""}} {
			cl, err := rt.Begin(a.ID, CallRequest{Capability: c.name, Input: []byte(`{}`), Generation: gen, ContractHash: c.hash})
			if err != nil {
				t.Fatalf("begin %s: %v", c.name, err)
			}
			_ = cl.End(OutcomeSucceeded, nil)
		}
		fu, _ := rt.FollowUp("s", Request{Text: "b", Grants: all})
		for _, p := range off {
			rt.SetProviderEnabled(p, false)
		}
		if err := rt.Finish(a.ID, StatusSucceeded, "done"); err != nil {
			t.Fatal(err)
		}
		h, err := rt.Digest(fu.ID)
		if err != nil || h.Digest == nil {
			t.Fatalf("%v: digest %+v %v", off, h, err)
		}
		names := map[string]bool{}
		for _, c := range h.Digest.Capabilities {
			names[c.Name] = true
		}
		if !names["read_file"] {
			t.Fatalf("%v: digest %+v lost read_file", off, h.Digest.Capabilities)
		}
		for _, p := range off {
			for _, c := range []struct{ name, provider string }{{"search", "web"}, {"mcp__srv__pull", "mcp:srv"}, {"mcp__github__issue", "mcp"}} {
				if names[c.name] && (c.provider == p || p == "mcp" && c.provider == "mcp:srv") {
					t.Fatalf("provider %s is disabled, yet the digest names %s: %+v", p, c.name, h.Digest.Capabilities)
				}
			}
		}
	}
}
