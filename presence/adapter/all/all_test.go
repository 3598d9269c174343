package all_test

import (
	"slices"
	"testing"

	"github.com/harn-dev/harn/presence/adapter/all"
)

func TestRegistry(t *testing.T) {
	want := []string{"claude-code", "codex", "codex-notify", "cursor", "gemini"}
	if got := all.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %q; want %q", got, want)
	}
	for _, n := range want {
		a, ok := all.Lookup(n)
		if !ok || a.Name() != n {
			t.Errorf("Lookup(%q) = %v, %v", n, a, ok)
		}
	}
	if _, ok := all.Lookup("vim"); ok {
		t.Error("Lookup of an unknown agent succeeded")
	}
}

// TestEveryRegisteredAdapterDeclaresACatalog: a task under any agent is
// checked against that agent's own tools, so an adapter without a catalog
// (or with an empty one, or one that names a tool twice) fails here.
func TestEveryRegisteredAdapterDeclaresACatalog(t *testing.T) {
	for _, n := range append(all.Names(), all.GenericCatalog) {
		tools, ok := all.Catalog(n)
		if !ok || len(tools) == 0 {
			t.Errorf("adapter %q declares no catalog: implement adapter.Cataloger", n)
			continue
		}
		seen := map[string]bool{}
		mutating := false
		for _, tl := range tools {
			if tl.Name == "" || seen[tl.Name] {
				t.Errorf("adapter %q: tool %q is empty or named twice", n, tl.Name)
			}
			seen[tl.Name] = true
			mutating = mutating || tl.Mutates
		}
		if !mutating {
			t.Errorf("adapter %q: no tool mutates; say which of its tools act", n)
		}
	}
	if _, ok := all.Catalog("vim"); ok {
		t.Error("Catalog of an unknown agent succeeded")
	}
}

func TestGeminiCatalogNamesItsOwnTools(t *testing.T) {
	tools, _ := all.Catalog("gemini")
	want := map[string]bool{"read_file": false, "run_shell_command": true, "write_file": true, "replace": true, "glob": false}
	for _, tl := range tools {
		if m, ok := want[tl.Name]; ok {
			if tl.Mutates != m {
				t.Errorf("gemini %s: Mutates = %v; want %v", tl.Name, tl.Mutates, m)
			}
			delete(want, tl.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("gemini's catalog lacks %v", want)
	}
}
