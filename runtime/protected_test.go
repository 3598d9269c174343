package runtime

import (
	"errors"
	"testing"
)

func TestProtectedPathsCoverHooksConfigAndAgentSettings(t *testing.T) {
	for rel, want := range map[string]bool{
		".git/hooks/pre-commit": true, ".git/config": true, ".git": true, ".GIT/Hooks/x": true,
		".harn/mcp.json": true, ".harn/agents/x.md": true, "./.harn/../.harn/skills/a/SKILL.md": true,
		".claude/settings.json": true, ".claude/settings.local.json": true, ".mcp.json": true,
		".codex/config.toml": true, ".cursor/mcp.json": true, ".gemini/settings.json": true,
		".husky/pre-commit": true, ".githooks/pre-push": true, ".vscode/tasks.json": true,
		"src/.git": false, "src/main.go": false, ".gitignore": false, ".github/workflows/ci.yml": false,
		".claude/commands/x.md": false, "docs/.harn/x": false, "../.git/hooks/x": false, ".harness": false,
	} {
		if _, got := ProtectedPath(rel); got != want {
			t.Errorf("ProtectedPath(%q) = %v, want %v", rel, got, want)
		}
	}
}

// guardedFixture is a runtime whose catalog has harn's guarded write tool
// and an unguarded one (an external agent's), a task started with grants.
func guardedFixture(t *testing.T, grants []Grant) (*Runtime, string, uint64) {
	t.Helper()
	rt, err := New(Config{Clock: NewFakeClock(), Ledger: NewMemLedger(), Key: []byte("test-node-key"), Grace: testGrace})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := rt.SetCatalog("harn", []Capability{
		{Name: "write", Kind: KindTool, ContractHash: "h-w", Provider: "core", Core: true, Subject: SubjectPath, Guarded: true},
		{Name: "Write", Kind: KindTool, ContractHash: "h-W", Provider: "claude", Core: true, Subject: SubjectPath},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.OpenSession("s", SessionConfig{Catalog: "harn", Workdir: "/w", Budget: testBudget}); err != nil {
		t.Fatal(err)
	}
	v, err := rt.Start("s", Request{Text: "t", Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	return rt, v.ID, gen
}

// TestAProtectedPathOpensOnlyToAGrantNamingItWithConfirm: the edit
// profile's write (and full's *) is refused on .git/hooks and .harn; a
// pattern, or a named grant without confirm, does not open it; a named
// grant with confirm does, and the call then waits for a confirmation
// even beside a grant that asks none. An ordinary path is untouched.
func TestAProtectedPathOpensOnlyToAGrantNamingItWithConfirm(t *testing.T) {
	edit, err := Profile("edit")
	if err != nil {
		t.Fatal(err)
	}
	call := func(rt *Runtime, task string, gen uint64, name, hash, path string) (*Call, error) {
		return rt.Begin(task, CallRequest{Capability: name, Input: []byte(`{"path":"` + path + `","content":"x"}`), Generation: gen, ContractHash: hash})
	}
	refused := func(t *testing.T, grants []Grant, paths ...string) {
		t.Helper()
		rt, task, gen := guardedFixture(t, grants)
		for _, p := range paths {
			_, err := call(rt, task, gen, "write", "h-w", p)
			var re *RefusalError
			if !errors.As(err, &re) || re.Check != CheckProtected || !errors.Is(err, ErrProtectedPath) {
				t.Errorf("write %s under %v: %v; want the protected_path check", p, grants, err)
			}
		}
	}
	refused(t, edit, ".git/hooks/pre-commit", ".harn/mcp.json", "/w/.git/config", "src/../.claude/settings.json")
	refused(t, []Grant{{Level: Execute, Capability: "*"}}, ".git/hooks/pre-commit")
	refused(t, []Grant{{Level: Execute, Capability: "write", Match: ".git/hooks/*", Confirm: true}}, ".git/hooks/pre-commit")
	refused(t, []Grant{{Level: Execute, Capability: "write", Match: ".git/hooks/pre-commit"}}, ".git/hooks/pre-commit")
	refused(t, append(edit, Grant{Level: Execute, Capability: "write", Match: ".git/hooks/pre-push", Confirm: true}), ".git/hooks/pre-commit")

	rt, task, gen := guardedFixture(t, append(edit, Grant{Level: Execute, Capability: "write", Match: ".git/hooks/pre-commit", Confirm: true}))
	c, err := call(rt, task, gen, "write", "h-w", ".git/hooks/pre-commit")
	if err != nil || !c.Pending {
		t.Fatalf("a named, confirmed grant: %+v, %v; want a call waiting for a confirmation", c, err)
	}
	if err := rt.Confirm(task, c.ID, "op@n"); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	if c, err := call(rt, task, gen, "write", "h-w", "src/main.go"); err != nil || c.Pending {
		t.Fatalf("an ordinary path: %+v, %v; want it to run at once", c, err)
	}
	// An external agent's Write is not harn's to guard.
	if c, err := call(rt, task, gen, "Write", "h-W", ".git/hooks/pre-commit"); err != nil || c.Pending {
		t.Fatalf("an unguarded tool: %+v, %v", c, err)
	}
}
