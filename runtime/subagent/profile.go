package subagent

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/harn-dev/harn/util/safefs"
	"github.com/harn-dev/harn/util/text"
)

// The built-in profiles.
const (
	ProfileImplementer = "implementer"
	ProfileExplorer    = "explorer"
	ProfileReviewer    = "reviewer"
)

// Bounds of project profiles.
const (
	maxProfileBytes = 64 << 10
	maxProfiles     = 64
	maxProfileTools = 64
)

// ErrProfile is an unknown profile, or a project profile file that cannot
// be read.
var ErrProfile = errors.New("subagent: profile")

// Profile is what a child starts with besides its brief: a prompt, the
// tools it may use (at most its parent's), the skills it activates, and
// optionally its own model.
type Profile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Tools are the tool names (or name patterns with *) the child may
	// call; nil means every tool of the parent. The handoff tool is
	// always the child's; the agent tool never is (children do not fan
	// out further).
	Tools  []string `json:"tools,omitempty"`
	Skills []string `json:"skills,omitempty"` // activated for the child's whole task
	Model  string   `json:"model,omitempty"`  // empty: the parent's
	Prompt string   `json:"prompt"`
	Source string   `json:"source,omitempty"` // the project file, empty for a built-in
}

// readTools are the tools of a profile that cannot write.
var readTools = []string{"read", "grep", "glob", "capabilities_list", "capabilities_search",
	"capabilities_inspect", "tools_load", "skills_activate"}

// Builtins are the built-in profiles, by name.
func Builtins() map[string]Profile {
	return map[string]Profile{
		ProfileImplementer: {Name: ProfileImplementer, Description: "makes a change the brief describes, verifies it, and reports it",
			Prompt: "You are an implementer working for a parent agent. Make the change the brief asks for, in small steps, " +
				"verify it (build, tests), and report with the handoff tool."},
		ProfileExplorer: {Name: ProfileExplorer, Description: "reads the repository to answer a question; never writes",
			Tools: slices.Clone(readTools),
			Prompt: "You are an explorer working for a parent agent. Read the repository to answer the brief's question. " +
				"You cannot change files. Report what you found with the handoff tool: findings go in verification, open questions in unresolved."},
		ProfileReviewer: {Name: ProfileReviewer, Description: "reviews a change for defects; never writes",
			Tools: slices.Clone(readTools),
			Prompt: "You are a reviewer working for a parent agent. Review the change the brief names for defects, risks and missing tests. " +
				"You cannot change files. Report with the handoff tool: each defect goes in unresolved, what you checked in verification."},
	}
}

var profileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// AgentsDir is a project's folder of profiles.
func AgentsDir(project string) string { return filepath.Join(project, ".harn", "agents") }

// Files are a project's .harn files as the node's trust check read them
// (or through safefs): slash names relative to .harn.
type Files interface {
	ReadDir(name string) ([]fs.DirEntry, error)
	ReadFile(name string, max int64) ([]byte, error)
}

// LoadProfiles returns the built-in profiles and the project's
// (.harn/agents/*.md under project, read through safefs: a file linked out
// of the project is skipped). It reads the project as trusted: a caller
// that has not checked the project's trust uses Builtins.
func LoadProfiles(project string) (map[string]Profile, error) {
	if project == "" {
		return Builtins(), nil
	}
	d, err := safefs.Open(filepath.Join(project, ".harn"))
	if errors.Is(err, fs.ErrNotExist) {
		return Builtins(), nil
	}
	if err != nil {
		return Builtins(), fmt.Errorf("%w: %w", ErrProfile, err)
	}
	defer d.Close()
	return LoadProfilesFrom(d, AgentsDir(project))
}

// LoadProfilesFrom returns the built-in profiles and those of files'
// agents/*.md (dir names that folder in errors); a project profile of a
// built-in's name replaces it. A file that cannot be parsed is named in
// the error and left out; the others load.
func LoadProfilesFrom(files Files, dir string) (map[string]Profile, error) {
	out := Builtins()
	if files == nil {
		return out, nil
	}
	ents, err := files.ReadDir("agents")
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrProfile, err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var errs []error
	n := 0
	for _, name := range names {
		if n >= maxProfiles {
			errs = append(errs, fmt.Errorf("%w: over %d profiles in %s; the rest are skipped", ErrProfile, maxProfiles, dir))
			break
		}
		p := filepath.Join(dir, name)
		b, err := files.ReadFile("agents/"+name, maxProfileBytes)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrProfile, p, err))
			continue
		}
		pr, err := ParseProfile(b, strings.TrimSuffix(name, ".md"))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		pr.Source = p
		out[pr.Name] = pr
		n++
	}
	return out, errors.Join(errs...)
}

// ParseProfile reads a profile file: a front matter between two ---
// lines with name, description, tools, skills and model (lists as
// `a, b` or `[a, b]`), then the body, which is the profile's prompt. A
// file without a name takes fallback (its file name).
func ParseProfile(data []byte, fallback string) (Profile, error) {
	if len(data) > maxProfileBytes {
		return Profile{}, fmt.Errorf("%w: over %d bytes", ErrProfile, maxProfileBytes)
	}
	src := strings.ReplaceAll(string(data), "\r\n", "\n")
	var p Profile
	if rest, ok := strings.CutPrefix(src, "---\n"); ok {
		fm, body, found := strings.Cut(rest, "\n---")
		if !found {
			return Profile{}, fmt.Errorf("%w: a front matter that never closes (---)", ErrProfile)
		}
		sc := bufio.NewScanner(strings.NewReader(fm))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			switch strings.TrimSpace(k) {
			case "name":
				p.Name = v
			case "description":
				p.Description = text.Clip(text.Sanitize(v), 500)
			case "model":
				p.Model = text.Clip(text.Sanitize(v), 256)
			case "tools":
				p.Tools = splitList(v)
				if p.Tools == nil {
					p.Tools = []string{} // named but empty: no tool besides handoff
				}
			case "skills":
				p.Skills = splitList(v)
			}
		}
		_, body, _ = strings.Cut(body, "\n")
		src = body
	}
	p.Prompt = strings.TrimSpace(src)
	if p.Name == "" {
		p.Name = fallback
	}
	switch {
	case !profileName.MatchString(p.Name):
		return Profile{}, fmt.Errorf("%w: name %q: use lower-case letters, digits, - _ . (at most 64)", ErrProfile, p.Name)
	case p.Prompt == "":
		return Profile{}, fmt.Errorf("%w: %s has no prompt (the body after the front matter)", ErrProfile, p.Name)
	case len(p.Tools) > maxProfileTools || len(p.Skills) > maxProfileTools:
		return Profile{}, fmt.Errorf("%w: %s names over %d tools or skills", ErrProfile, p.Name, maxProfileTools)
	}
	for _, t := range append(slices.Clone(p.Tools), p.Skills...) {
		if !toolName.MatchString(t) {
			return Profile{}, fmt.Errorf("%w: %s: tool or skill %q is not a name", ErrProfile, p.Name, text.Clip(t, 80))
		}
	}
	return p, nil
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_*][A-Za-z0-9_.*-]{0,127}$`)

func splitList(v string) []string {
	v = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), "["), "]")
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.Trim(strings.TrimSpace(f), `"'`); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Allows reports whether the profile lets a child call tool. The agent
// tool is never a child's; the handoff tool always is.
func (p Profile) Allows(tool string) bool {
	switch tool {
	case ToolAgent:
		return false
	case ToolHandoff:
		return true
	}
	if p.Tools == nil {
		return true
	}
	for _, t := range p.Tools {
		if t == tool || (strings.Contains(t, "*") && globName(t, tool)) {
			return true
		}
	}
	return false
}

// globName matches a name against a pattern where * is any run.
func globName(pattern, name string) bool {
	ok, err := filepath.Match(strings.ReplaceAll(pattern, "/", ""), strings.ReplaceAll(name, "/", ""))
	return err == nil && ok
}
