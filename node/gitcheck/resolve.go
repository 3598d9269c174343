package gitcheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// maxWalkUp bounds the search for an existing ancestor of a deleted path.
const maxWalkUp = 4096

// repo is one work tree and the claimed paths inside it, relative to its
// top level, slash-separated, sorted and unique.
type repo struct {
	top   string
	paths []string
}

// topResult caches one `git rev-parse --show-toplevel`.
type topResult struct {
	top    string
	ok     bool
	detail string
}

// group resolves paths against cwd and groups them by work tree, sorted by
// top level. A path outside every work tree fails with CheckNoRepo.
func (r *runner) group(ctx context.Context, cwd string, paths []string) ([]*repo, error) {
	cache := make(map[string]topResult)
	byTop := make(map[string]map[string]bool)
	var outside []string
	var outsideDir, outsideDetail string
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs := filepath.Clean(p)
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(cwd, abs)
		}
		dir, tail := probeDir(abs)
		real := dir
		if rp, err := filepath.EvalSymlinks(dir); err == nil {
			real = rp
		}
		tr, seen := cache[real]
		if !seen {
			top, ok, detail, err := r.toplevel(ctx, real)
			if err != nil {
				return nil, err
			}
			tr = topResult{top: top, ok: ok, detail: detail}
			cache[real] = tr
		}
		rel := ""
		if tr.ok {
			if rp, err := filepath.Rel(tr.top, real); err == nil && rp != ".." && !strings.HasPrefix(rp, ".."+string(filepath.Separator)) {
				rel = filepath.ToSlash(filepath.Join(rp, tail))
			} else {
				tr = topResult{detail: fmt.Sprintf("%s resolves outside work tree %s", real, tr.top)}
			}
		}
		if !tr.ok {
			if len(outside) == 0 {
				outsideDir, outsideDetail = dir, tr.detail
			}
			outside = append(outside, abs)
			continue
		}
		if byTop[tr.top] == nil {
			byTop[tr.top] = make(map[string]bool)
		}
		byTop[tr.top][rel] = true
	}
	if len(outside) > 0 {
		detail := fmt.Sprintf("%s is not inside a git work tree", outside[0])
		if len(outside) > 1 {
			detail += fmt.Sprintf(" (and %d more claimed paths)", len(outside)-1)
		}
		if outsideDetail != "" {
			detail += " (git: " + outsideDetail + ")"
		}
		return nil, &CheckError{Check: CheckNoRepo, Repo: outsideDir, Paths: outside, Detail: detail}
	}
	repos := make([]*repo, 0, len(byTop))
	for top, set := range byTop {
		rp := &repo{top: top}
		for p := range set {
			rp.paths = append(rp.paths, p)
		}
		sort.Strings(rp.paths)
		repos = append(repos, rp)
	}
	sort.Slice(repos, func(i, j int) bool { return repos[i].top < repos[j].top })
	return repos, nil
}

// probeDir returns the directory whose repository owns abs, and the part of
// abs below it. An existing directory is its own probe; otherwise the probe
// is abs's directory, or its nearest existing ancestor when that was
// deleted too.
func probeDir(abs string) (dir, tail string) {
	if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
		return abs, ""
	}
	dir, tail = filepath.Dir(abs), filepath.Base(abs)
	return existingAncestorTail(dir, tail)
}

// existingAncestor returns the nearest existing ancestor of dir (dir
// itself if it exists) and the path below it.
func existingAncestor(dir string) (string, string) {
	return existingAncestorTail(dir, "")
}

func existingAncestorTail(dir, tail string) (string, string) {
	for i := 0; i < maxWalkUp; i++ {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		tail = filepath.Join(filepath.Base(dir), tail)
		dir = parent
	}
	return dir, tail
}

// toplevel runs `git rev-parse --show-toplevel` in dir. ok is false when
// dir is not in a work tree; detail then carries git's reason.
func (r *runner) toplevel(ctx context.Context, dir string) (top string, ok bool, detail string, err error) {
	res, err := r.run(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", false, "", err
	}
	top = strings.TrimRight(string(res.stdout), "\r\n")
	if !res.ok() || top == "" {
		return "", false, res.firstLine(), nil
	}
	return realPath(top), true, "", nil
}

// realPath resolves symlinks where it can, so that paths compare.
func realPath(p string) string {
	p = filepath.Clean(filepath.FromSlash(p))
	if rp, err := filepath.EvalSymlinks(p); err == nil {
		return rp
	}
	return p
}
