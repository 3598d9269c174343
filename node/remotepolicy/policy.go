// Package remotepolicy is the room of what a caller on another node may
// choose for a task on this node. The node's --remote-control policy says
// who may act here at all; this room says what such a caller gets once
// admitted: a harn session runs with this node's own provider (its URL,
// its key, its models), never a URL the caller names; a new session works
// in one of this node's workspace roots (--workspace), never in the data
// dir nor outside a root; and every task it gives text to holds grants
// within the profiles this node names (--remote-profiles, default
// read-only). A refusal wraps ErrRefused (PermissionDenied on the wire,
// exit 16). The room knows the node's sessions only through Sessions,
// declared here.
package remotepolicy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/text"
)

// ErrRefused is an action from another node that this node's policy
// refuses.
var ErrRefused = errors.New("remote: refused to a caller on another node")

// ErrBadPolicy is a --remote-profiles or --workspace value that does not
// parse or name a directory.
var ErrBadPolicy = errors.New("remote: bad policy")

// DefaultProfiles is --remote-profiles' default.
const DefaultProfiles = "read-only"

// Config is a node's policy for callers on other nodes.
type Config struct {
	Node string
	// Profiles are the grant profiles (runtime.ProfileNames) whose union
	// bounds every task a remote caller gives text to; none: no task.
	Profiles []string
	// Workspaces are the roots a new session from another node works in:
	// absolute, symlinks resolved (ResolveWorkspaces). The first is the
	// default workdir. None: no new session from another node.
	Workspaces []string
	// Private are paths (resolved) a remote workdir may neither be, lie in,
	// nor hold: the data dir, the node's secret files.
	Private []string
	// Provider: the node's own provider, which every harn session from
	// another node runs with. Models, when set, are the models such a
	// session may name; the first is its default.
	ProviderKind string // openai (default) or anthropic
	ProviderURL  string // "": the vendor's
	Models       []string
}

// DefaultConfig is the closed default: read-only tasks, no workspace (so
// no new session from another node), openai.
func DefaultConfig() Config {
	return Config{Profiles: []string{DefaultProfiles}, ProviderKind: "openai"}
}

// Validate checks the profile names and that the workspaces are resolved
// absolute paths.
func (c Config) Validate() error {
	for _, p := range c.Profiles {
		if !slices.Contains(runtime.ProfileNames(), p) {
			return fmt.Errorf("%w: --remote-profiles names %q; use read-only, edit, full or none", ErrBadPolicy, text.Clip(p, 64))
		}
	}
	for _, w := range c.Workspaces {
		if !filepath.IsAbs(w) || filepath.Clean(w) != w {
			return fmt.Errorf("%w: workspace %q is not a clean absolute path", ErrBadPolicy, text.Clip(w, 200))
		}
	}
	if c.ProviderKind != "" && c.ProviderKind != "openai" && c.ProviderKind != "anthropic" {
		return fmt.Errorf("%w: --provider %q; use openai or anthropic", ErrBadPolicy, text.Clip(c.ProviderKind, 64))
	}
	return nil
}

// ParseProfiles reads --remote-profiles: none, or NAME,... of
// read-only, edit and full.
func ParseProfiles(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return nil, nil
	}
	if s == "" {
		return []string{DefaultProfiles}, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(runtime.ProfileNames(), p) {
			return nil, fmt.Errorf("%w: --remote-profiles names %q; use none, or read-only, edit and full (NAME,...)", ErrBadPolicy, text.Clip(p, 64))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// ResolveWorkspaces makes each root absolute with its symlinks resolved;
// each must be a directory.
func ResolveWorkspaces(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		abs, err := filepath.Abs(d)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: --workspace %s: %v; name an existing directory", ErrBadPolicy, text.Clip(text.OneLine(d), 200), err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%w: --workspace %s is not a directory", ErrBadPolicy, text.Clip(text.OneLine(d), 200))
		}
		if !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return out, nil
}

// Resolve is a path with its symlinks resolved (as far as it exists),
// for Config.Private.
func Resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// Holding lists the roots that hold one of the private paths: a workdir
// at such a root (or above the private path) is refused, so the operator
// is told at the node's start.
func (c Config) Holding() []string {
	var out []string
	for _, w := range c.Workspaces {
		for _, p := range c.Private {
			if within(p, w) {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
