package hook

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/harn-dev/harn/presence"
)

// Bounds of the repository lookup on the hook path: it walks at most
// gitMaxLevels folders up from the cwd and reads at most gitMaxRead bytes
// of any one file (HEAD, a .git file, commondir, config).
const (
	GitMaxLevels = 40
	gitMaxRead   = 64 << 10
	// gitMaxName bounds a repo or branch name; a longer one is left out.
	gitMaxName = 255
)

// gitInfo is what the hook knows of the repository around a folder.
type GitInfo struct {
	Repo   string // the origin URL's last path element without .git, else the top-level folder's name
	Branch string // "" when HEAD is detached
	Top    string // the work tree's top level
	Origin string // remote origin's URL as configured, "" without one
}

// repoOf finds the repository that holds dir by walking up to a .git
// folder or a `gitdir:` file (worktrees, submodules) and reads HEAD and
// the config with plain file reads: no git process runs on the hook path.
// ok is false outside any repository or when dir is not absolute.
func RepoOf(dir string) (GitInfo, bool) {
	if dir == "" || !filepath.IsAbs(dir) {
		return GitInfo{}, false
	}
	dir = filepath.Clean(dir)
	for i := 0; i < GitMaxLevels; i++ {
		if info, ok := RepoAt(dir); ok {
			return info, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return GitInfo{}, false
}

// repoAt reads the repository whose work tree's top level is top, if top
// holds a .git.
func RepoAt(top string) (GitInfo, bool) {
	dotgit := filepath.Join(top, ".git")
	st, err := os.Stat(dotgit)
	if err != nil {
		return GitInfo{}, false
	}
	gitDir := dotgit
	if !st.IsDir() {
		b, err := ReadSmall(dotgit)
		if err != nil {
			return GitInfo{}, false
		}
		line, _, _ := strings.Cut(string(b), "\n")
		p, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if !ok {
			return GitInfo{}, false
		}
		p = strings.TrimSpace(p)
		if !filepath.IsAbs(p) {
			p = filepath.Join(top, p)
		}
		gitDir = filepath.Clean(p)
	}
	head, err := ReadSmall(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return GitInfo{}, false
	}
	info := GitInfo{Branch: BranchOf(head), Top: top}
	// A linked worktree keeps its config in the common dir.
	common := gitDir
	if b, err := ReadSmall(filepath.Join(gitDir, "commondir")); err == nil {
		p := strings.TrimSpace(string(b))
		if !filepath.IsAbs(p) {
			p = filepath.Join(gitDir, p)
		}
		common = filepath.Clean(p)
	}
	if cfg, err := ReadSmall(filepath.Join(common, "config")); err == nil {
		info.Origin = OriginURL(cfg)
		info.Repo = RepoNameOfURL(info.Origin)
	}
	if info.Repo == "" {
		info.Repo = filepath.Base(top)
		// A linked worktree is the same repository as its main work
		// tree: name it after that one when the common dir is a .git
		// folder.
		if common != gitDir && filepath.Base(common) == ".git" {
			info.Repo = filepath.Base(filepath.Dir(common))
		}
	}
	return info, true
}

// readSmall reads at most gitMaxRead bytes of a file.
func ReadSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, gitMaxRead))
}

// branchOf reads HEAD: "ref: refs/heads/NAME" is on branch NAME; anything
// else (a commit id: detached) is no branch.
func BranchOf(head []byte) string {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "ref:")
	if !ok {
		return ""
	}
	b, ok := strings.CutPrefix(strings.TrimSpace(ref), "refs/heads/")
	if !ok {
		return ""
	}
	return b
}

// originURL returns remote "origin"'s first url from a git config file
// (section names are case-insensitive, subsection names are not).
func OriginURL(cfg []byte) string {
	in := false
	sc := bufio.NewScanner(bytes.NewReader(cfg))
	sc.Buffer(make([]byte, 0, 4096), gitMaxRead)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.LastIndexByte(line, ']')
			if end < 0 {
				in = false
				continue
			}
			sec := strings.TrimSpace(line[1:end])
			name, sub, _ := strings.Cut(sec, " ")
			in = strings.EqualFold(name, "remote") && strings.TrimSpace(sub) == `"origin"`
			continue
		}
		if !in {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "url") {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		return v
	}
	return ""
}

// repoNameOfURL is the last path element of a remote URL without ".git":
// https://host/owner/name.git, git@host:owner/name.git and /srv/name.git
// all name "name".
func RepoNameOfURL(u string) string {
	u = strings.TrimRight(strings.TrimSpace(u), "/")
	if u == "" {
		return ""
	}
	if i := strings.LastIndexAny(u, "/:\\"); i >= 0 {
		u = u[i+1:]
	}
	u = strings.TrimSuffix(u, ".git")
	if u == "" || u == "." || u == ".." {
		return ""
	}
	return u
}

// stampRepo sets repo and branch on the events that open a session or a
// turn, from their cwd; the lookup runs once per cwd.
func StampRepo(evs []presence.Event) {
	seen := map[string]*GitInfo{}
	for i := range evs {
		e := &evs[i]
		if e.Type != presence.TypeSessionStart && e.Type != presence.TypeUserPromptSubmit {
			continue
		}
		cwd, _ := e.Attrs[presence.AttrCwd].(string)
		info, done := seen[cwd]
		if !done {
			if gi, ok := RepoOf(cwd); ok {
				info = &gi
			}
			seen[cwd] = info
		}
		if info == nil {
			continue
		}
		if len(info.Repo) <= gitMaxName {
			e.SetAttr(presence.AttrRepo, info.Repo)
		}
		if len(info.Branch) <= gitMaxName {
			e.SetAttr(presence.AttrBranch, info.Branch)
		}
	}
}
