package e2e

import (
	"strings"
	"testing"
)

// TestErrorsCarryNoPackagePrefix: what a failed command prints names the
// problem, not the Go package that found it.
func TestErrorsCarryNoPackagePrefix(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	for _, args := range [][]string{
		{"task", "show", "t-nosuch"},
		{"task", "cancel", "t-nosuch"},
		{"task", "steer", "t-nosuch", "go on"},
	} {
		r := e.harn("", args...)
		if r.code == 0 {
			t.Fatalf("%v: exit 0", args)
		}
		for _, p := range []string{"harn: tasks:", "harn: runtime:", "harn: cli:", "harn: node:"} {
			if strings.Contains(r.stderr, p) {
				t.Errorf("%v: %q carries a package prefix", args, r.stderr)
			}
		}
		oneLineErr(t, r)
	}
}
