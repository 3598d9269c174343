package all

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/harn-dev/harn/presence/adapter"
)

// Driver returns the adapter whose agent the runtime/exec driver named
// name runs (adapter.Driven.Drivers: "claude", "codex").
func Driver(name string) (adapter.Driven, bool) {
	for _, r := range registry {
		if d, ok := r.new().(adapter.Driven); ok && slices.Contains(d.Drivers(), name) {
			return d, true
		}
	}
	return nil, false
}

// Headless is how the command line argv runs when its program is an
// agent harn knows (its base name, without .exe, is one of an adapter's
// Drivers); ok is false for any other program.
func Headless(argv []string) (adapter.Headless, bool) {
	if len(argv) == 0 {
		return adapter.Headless{}, false
	}
	d, ok := Driver(strings.TrimSuffix(filepath.Base(argv[0]), ".exe"))
	if !ok {
		return adapter.Headless{}, false
	}
	return d.Headless(argv), true
}
