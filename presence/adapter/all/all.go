// Package all is the registry of agent hook adapters, by the name used in
// `harn hook <name>`.
package all

import (
	"sort"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/claudecode"
	"github.com/harn-dev/harn/presence/adapter/codex"
	"github.com/harn-dev/harn/presence/adapter/cursor"
	"github.com/harn-dev/harn/presence/adapter/gemini"
)

var registry = map[string]func() adapter.Adapter{
	claudecode.Name:  claudecode.New,
	codex.Name:       codex.New,
	codex.NotifyName: codex.NewNotify,
	cursor.Name:      cursor.New,
	gemini.Name:      gemini.New,
}

// Lookup returns the adapter named name.
func Lookup(name string) (adapter.Adapter, bool) {
	f, ok := registry[name]
	if !ok {
		return nil, false
	}
	return f(), true
}

// Names lists the adapter names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
