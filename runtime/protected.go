package runtime

import (
	"path"
	"path/filepath"
	"strings"
)

// Protected paths: what a repository's next session, an agent's next
// start or the next `git commit` runs or loads. harn's own write and edit
// tools (capabilities marked Guarded) never change one on a wildcard or a
// profile: only a grant that names the exact path (no pattern) and asks
// for a confirmation opens it, and then every such call waits for one.
// Compared without case, for the file systems that ignore it.
var protectedPaths = []string{
	".harn/",                // harn's own project config: mcp.json, agents, skills, instructions
	".git/",                 // hooks, config (core.hooksPath, aliases, filters), everything
	".git",                  // the file a worktree or submodule has instead
	".husky/", ".githooks/", // where core.hooksPath usually points
	".claude/settings*.json",                      // Claude Code's hooks and permissions
	".mcp.json",                                   // Claude Code's project MCP servers
	".codex/",                                     // Codex's project config
	".cursor/",                                    // Cursor's rules, hooks and MCP servers
	".gemini/settings.json",                       // Gemini CLI's hooks and MCP servers
	".vscode/settings.json", ".vscode/tasks.json", // an editor's tasks that run on open
}

// ProtectedPaths lists the protected paths (a trailing / is a folder and
// all in it; * matches within one name).
func ProtectedPaths() []string { return append([]string(nil), protectedPaths...) }

// ProtectedPath reports whether rel, a path relative to a working
// directory, is protected, and the entry of ProtectedPaths that covers it.
// A path that leaves the directory is not (the tools refuse it anyway).
func ProtectedPath(rel string) (string, bool) {
	rel = strings.ToLower(path.Clean(filepath.ToSlash(rel)))
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/") {
		return "", false
	}
	for _, p := range protectedPaths {
		if dir, ok := strings.CutSuffix(p, "/"); ok {
			if rel == dir || strings.HasPrefix(rel, p) {
				return p, true
			}
			continue
		}
		if ok, _ := path.Match(p, rel); ok {
			return p, true
		}
	}
	return "", false
}

// protectedSubject is the protected entry a path subject falls under,
// relative to workdir.
func protectedSubject(subject, workdir string) (string, bool) {
	if subject == "" {
		return "", false
	}
	p := filepath.FromSlash(subject)
	if filepath.IsAbs(p) {
		if workdir == "" {
			return "", false
		}
		r, err := filepath.Rel(workdir, p)
		if err != nil {
			return "", false
		}
		p = r
	}
	return ProtectedPath(p)
}

// namesPath reports whether grants hold an execute grant on c with
// confirm whose input pattern is exactly subject's path (no wildcard).
func namesPath(grants []Grant, c *Capability, subject, workdir string) bool {
	abs := func(p string) string {
		p = filepath.FromSlash(p)
		if !filepath.IsAbs(p) {
			p = filepath.Join(workdir, p)
		}
		return filepath.Clean(p)
	}
	want := abs(subject)
	for _, g := range grants {
		if g.Level == Execute && g.Confirm && g.Match != "" && !strings.ContainsAny(g.Match, "*?[") &&
			nameMatch(g.Capability, c.Name) && abs(g.Match) == want {
			return true
		}
	}
	return false
}
