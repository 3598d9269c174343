package gitcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// statusChunk bounds the pathspecs passed to one git status call.
const statusChunk = 256

// maxListed bounds the entries a Detail names.
const maxListed = 5

// readFailure is a git command that failed inside a repository: the
// repository cannot be read, so it does not verify.
func readFailure(top string, paths []string, what string, res result) *CheckError {
	return &CheckError{Check: CheckVerify, Repo: top, Paths: paths,
		Detail: fmt.Sprintf("%s failed: %s", what, res.firstLine())}
}

// checkDirty requires the claimed paths to have no status entries.
func (r *runner) checkDirty(ctx context.Context, rp *repo) error {
	var dirty, described []string
	for start := 0; start < len(rp.paths); start += statusChunk {
		end := min(start+statusChunk, len(rp.paths))
		args := append([]string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none", "--"}, rp.paths[start:end]...)
		res, err := r.run(ctx, rp.top, args...)
		if err != nil {
			return err
		}
		if !res.ok() {
			return readFailure(rp.top, rp.paths, "git status", res)
		}
		for _, e := range parseStatus(res.stdout) {
			dirty = append(dirty, e.path)
			described = append(described, e.describe())
		}
	}
	if len(dirty) == 0 {
		return nil
	}
	detail := "claimed paths have uncommitted changes: " + strings.Join(described[:min(len(described), maxListed)], ", ")
	if len(described) > maxListed {
		detail += fmt.Sprintf(" (+%d more)", len(described)-maxListed)
	}
	return &CheckError{Check: CheckDirty, Repo: rp.top, Paths: dirty, Detail: detail}
}

// statusEntry is one `git status --porcelain=v1 -z` entry.
type statusEntry struct {
	x, y byte
	path string
}

func (e statusEntry) describe() string {
	var what string
	switch {
	case e.x == '?':
		what = "untracked"
	case e.x == 'U' || e.y == 'U' || (e.x == 'A' && e.y == 'A') || (e.x == 'D' && e.y == 'D'):
		what = "unmerged"
	case e.y == 'D':
		what = "deleted"
	case e.y != ' ':
		what = "modified"
	case e.x == 'D':
		what = "staged deletion"
	default:
		what = "staged"
	}
	return what + " " + e.path
}

// parseStatus parses `XY path\0` entries; renames and copies carry their
// source as an extra NUL-terminated field, which is skipped.
func parseStatus(out []byte) []statusEntry {
	var entries []statusEntry
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 || f[2] != ' ' {
			continue // the trailing empty field, or a truncated one
		}
		e := statusEntry{x: f[0], y: f[1], path: string(f[3:])}
		entries = append(entries, e)
		if e.x == 'R' || e.x == 'C' {
			i++
		}
	}
	return entries
}

// checkSubmodule walks up from the work tree at top through its enclosing
// superprojects, requiring each to have the submodule's HEAD committed as
// its gitlink. It returns the superprojects it checked.
func (r *runner) checkSubmodule(ctx context.Context, top string) ([]string, error) {
	var enclosing []string
	seen := map[string]bool{top: true}
	for depth := 0; ; depth++ {
		res, err := r.run(ctx, top, "rev-parse", "--show-superproject-working-tree")
		if err != nil {
			return nil, err
		}
		if !res.ok() {
			return nil, readFailure(top, nil, "git rev-parse --show-superproject-working-tree", res)
		}
		out := strings.TrimRight(string(res.stdout), "\r\n")
		if out == "" {
			return enclosing, nil
		}
		super := realPath(out)
		if depth >= MaxSubmoduleDepth || seen[super] {
			return nil, &CheckError{Check: CheckSubmodule, Repo: super,
				Detail: fmt.Sprintf("submodules nest deeper than %d levels above the claimed paths; cannot certify", MaxSubmoduleDepth)}
		}
		seen[super] = true
		if err := r.checkPointer(ctx, super, top); err != nil {
			return nil, err
		}
		enclosing = append(enclosing, super)
		top = super
	}
}

// checkPointer requires super to have sub's HEAD committed at sub's path.
func (r *runner) checkPointer(ctx context.Context, super, sub string) error {
	head, err := r.head(ctx, sub)
	if err != nil {
		return err
	}
	relOS, err := filepath.Rel(super, sub)
	if err != nil || relOS == "." || strings.HasPrefix(relOS, "..") {
		return &CheckError{Check: CheckSubmodule, Repo: super, Paths: []string{sub},
			Detail: fmt.Sprintf("submodule %s does not lie inside its superproject", sub)}
	}
	rel := filepath.ToSlash(relOS)
	fail := func(detail string) error {
		return &CheckError{Check: CheckSubmodule, Repo: super, Paths: []string{rel}, Detail: detail}
	}
	// --ignore-submodules=dirty: only the recorded commit matters here, not
	// the submodule's own work tree (the dirty check covers claimed files);
	// it also overrides an `ignore = all` in .gitmodules.
	res, err := r.run(ctx, super, "status", "--porcelain=v1", "-z", "--untracked-files=no", "--ignore-submodules=dirty", "--", rel)
	if err != nil {
		return err
	}
	if !res.ok() {
		return readFailure(super, []string{rel}, "git status", res)
	}
	if entries := parseStatus(res.stdout); len(entries) > 0 {
		return fail(fmt.Sprintf("superproject has an uncommitted change to submodule %s (status %q; submodule HEAD is %s)", rel, string([]byte{entries[0].x, entries[0].y}), short(head)))
	}
	res, err = r.run(ctx, super, "ls-tree", "-z", "HEAD", "--", rel)
	if err != nil {
		return err
	}
	if !res.ok() {
		return fail(fmt.Sprintf("superproject HEAD cannot be read to find submodule %s: %s", rel, res.firstLine()))
	}
	mode, sha, ok := parseTreeEntry(res.stdout)
	switch {
	case !ok:
		return fail(fmt.Sprintf("superproject HEAD does not record submodule %s", rel))
	case mode != "160000":
		return fail(fmt.Sprintf("superproject HEAD records %s as mode %s, not a submodule", rel, mode))
	case sha != head:
		return fail(fmt.Sprintf("superproject HEAD records submodule %s at %s but its HEAD is %s", rel, short(sha), short(head)))
	}
	return nil
}

// parseTreeEntry parses the first `mode type sha\tpath\0` of git ls-tree -z.
func parseTreeEntry(out []byte) (mode, sha string, ok bool) {
	entry, _, _ := bytes.Cut(out, []byte{0})
	meta, _, found := bytes.Cut(entry, []byte{'\t'})
	if !found {
		return "", "", false
	}
	f := strings.Fields(string(meta))
	if len(f) != 3 {
		return "", "", false
	}
	return f[0], f[2], true
}

// head resolves HEAD to a commit id; failing that, the repository does not
// verify.
func (r *runner) head(ctx context.Context, top string) (string, error) {
	res, err := r.run(ctx, top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(res.stdout))
	if !res.ok() || sha == "" {
		return "", &CheckError{Check: CheckVerify, Repo: top,
			Detail: "HEAD does not name a commit (no commits yet, or a broken ref)"}
	}
	return sha, nil
}

// checkVerify requires HEAD to name a commit and every object reachable
// from the refs, reflogs and index to be present.
//
// `git fsck --connectivity-only` checks presence and links, not object
// contents, which keeps it proportional to the number of objects; the call
// is bounded by Config.Timeout like every other.
func (r *runner) checkVerify(ctx context.Context, top string, paths []string) error {
	if _, err := r.head(ctx, top); err != nil {
		if ce := (*CheckError)(nil); errors.As(err, &ce) {
			ce.Paths = paths
		}
		return err
	}
	res, err := r.run(ctx, top, "fsck", "--connectivity-only", "--no-progress", "--no-dangling")
	if err != nil {
		return err
	}
	if !res.ok() {
		first := firstLineOf(string(res.stdout))
		if first == "" {
			first = res.firstLine()
		}
		return &CheckError{Check: CheckVerify, Repo: top, Paths: paths,
			Detail: "git fsck --connectivity-only reports: " + first}
	}
	return nil
}

// checkUnpushed requires HEAD to be contained in a remote-tracking ref, as
// of the last push or fetch.
func (r *runner) checkUnpushed(ctx context.Context, top string, paths []string) error {
	res, err := r.run(ctx, top, "for-each-ref", "--contains", "HEAD", "--count=1", "--format=%(refname)", "refs/remotes")
	if err != nil {
		return err
	}
	if !res.ok() {
		return readFailure(top, paths, "git for-each-ref --contains HEAD", res)
	}
	if len(bytes.TrimSpace(res.stdout)) > 0 {
		return nil
	}
	head, err := r.head(ctx, top)
	if err != nil {
		return err
	}
	remotes, err := r.run(ctx, top, "remote")
	if err != nil {
		return err
	}
	if !remotes.ok() {
		return readFailure(top, paths, "git remote", remotes)
	}
	if len(bytes.TrimSpace(remotes.stdout)) == 0 {
		return &CheckError{Check: CheckUnpushed, Repo: top, Paths: paths,
			Detail: fmt.Sprintf("the repository has no remote, so HEAD %s is on none", short(head))}
	}
	return &CheckError{Check: CheckUnpushed, Repo: top, Paths: paths,
		Detail: fmt.Sprintf("HEAD %s is not reachable from any remote-tracking ref (as of the last push or fetch)", short(head))}
}

func firstLineOf(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
