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
