// Package gitcheck is the git finalization check that
// `harn agents lifecycle done` requires before a session may declare its
// task done.
//
// Check runs the real git CLI over the paths a session touched (its durable
// write-claim history) and certifies repository hygiene, not tests or
// business correctness: the claimed paths are committed, every enclosing
// superproject records the submodule's HEAD, the repository verifies, and
// HEAD is reachable from a remote-tracking ref.
//
// The reachability check makes no network call: it trusts the
// remote-tracking refs (refs/remotes/...) as of the repository's last push or
// fetch. A push updates them; a commit pushed by another clone is only seen
// after a fetch.
//
// Git runs with a clean environment (LC_ALL=C, GIT_TERMINAL_PROMPT=0,
// GIT_CONFIG_NOSYSTEM=1, the global config replaced by an empty file, literal
// pathspecs and no optional locks), so the outcome depends on the repository
// alone and the check never takes the index lock.
package gitcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/harn-dev/harn/util/text"
)

// Checks, in the order Check reports them.
const (
	// CheckDirty: a claimed path is modified, staged, untracked or deleted
	// without a commit.
	CheckDirty = "dirty"
	// CheckSubmodule: an enclosing superproject does not have the
	// submodule's current HEAD committed as its gitlink.
	CheckSubmodule = "submodule_pointer"
	// CheckVerify: HEAD does not name a commit, git fsck finds missing
	// objects, or git cannot read the repository.
	CheckVerify = "verify"
	// CheckUnpushed: HEAD is not reachable from any remote-tracking ref, or
	// the repository has no remote.
	CheckUnpushed = "unpushed"
	// CheckNoRepo: a claimed path is not inside a git work tree. Reported
	// before any other check.
	CheckNoRepo = "not_a_repository"
)

// ErrFinalization is wrapped by every *CheckError.
var ErrFinalization = errors.New("git finalization check failed")

// ErrInvalidConfig reports a Config that Validate rejects.
var ErrInvalidConfig = errors.New("gitcheck: invalid config")

// MaxSubmoduleDepth bounds how many enclosing superprojects are checked.
const MaxSubmoduleDepth = 8

// Config tunes how git is run.
type Config struct {
	// Git is the git executable, looked up on PATH when it has no slash.
	// Empty means "git".
	Git string
	// Timeout bounds each git call. Zero means 10s. git fsck over a very
	// large history may need more.
	Timeout time.Duration
}

// DefaultConfig returns git from PATH and a 10s timeout per git call.
func DefaultConfig() Config {
	return Config{Git: "git", Timeout: 10 * time.Second}
}

// Validate reports a config Check cannot use. Zero fields take defaults.
func (c Config) Validate() error {
	if c.Timeout < 0 {
		return fmt.Errorf("%w: timeout %v is negative", ErrInvalidConfig, c.Timeout)
	}
	if strings.ContainsRune(c.Git, 0) {
		return fmt.Errorf("%w: git executable name contains NUL", ErrInvalidConfig)
	}
	return nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Git == "" {
		c.Git = d.Git
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	return c
}

// CheckError is a failed finalization check. It unwraps to
// ErrFinalization.
type CheckError struct {
	// Check is one of the Check* constants.
	Check string
	// Repo is the repository's top-level directory (for CheckSubmodule,
	// the superproject that must commit the pointer; for CheckNoRepo, the
	// directory that was probed).
	Repo string
	// Paths are the offending paths: dirty paths relative to Repo, the
	// submodule's path in the superproject, the claimed paths of a repo
	// that failed verify or unpushed, or the claimed paths outside any
	// repository.
	Paths []string
	// Detail says what is wrong, on one line.
	Detail string
}

// Error is one line: what failed, where, why, and how to fix it.
func (e *CheckError) Error() string {
	return text.OneLine(fmt.Sprintf("git finalization check %s failed in %s: %s; %s", e.Check, e.Repo, e.Detail, fixHint(e.Check)))
}

// Unwrap returns ErrFinalization.
func (e *CheckError) Unwrap() error { return ErrFinalization }

func fixHint(check string) string {
	switch check {
	case CheckDirty:
		return "commit or revert the claimed paths, then push"
	case CheckSubmodule:
		return "commit the submodule's new HEAD in the superproject (git add <submodule> && git commit) and push it"
	case CheckVerify:
		return "repair the repository (run git fsck for details) or re-clone it"
	case CheckUnpushed:
		return "push HEAD to a remote (git push; add a remote first if there is none)"
	case CheckNoRepo:
		return "claimed paths must lie inside a git work tree; move the work into a repository"
	default:
		return "see git for details"
	}
}

// GitError reports that git itself could not be run to completion: the
// executable is missing, a call timed out, or ctx ended. It is an
// operational failure, not a failed check, and does not wrap
// ErrFinalization.
type GitError struct {
	// Dir is the directory git ran in.
	Dir string
	// Args are git's arguments.
	Args []string
	// Err is the cause, e.g. exec.ErrNotFound or context.DeadlineExceeded.
	Err error
}

func (e *GitError) Error() string {
	hint := ""
	if errors.Is(e.Err, context.DeadlineExceeded) {
		hint = " (raise the git timeout for very large repositories)"
	}
	return text.OneLine(fmt.Sprintf("gitcheck: git %s in %s: %v%s", strings.Join(e.Args, " "), e.Dir, e.Err, hint))
}

// Unwrap returns the cause.
func (e *GitError) Unwrap() error { return e.Err }

// Check certifies the repositories holding paths. Relative paths are taken
// from cwd (empty cwd: the process's working directory). Paths are grouped
// by repository (the top level of the path's directory, or of its nearest
// existing ancestor when the path or directory was deleted; an existing
// directory is probed itself). For each repository, in this order across
// all repositories, Check requires:
//
//  1. dirty: `git status --porcelain -z --untracked-files=all -- <paths>`
//     is empty;
//  2. submodule_pointer: if the repository is a submodule, the
//     superproject's HEAD records its HEAD and the superproject has no
//     uncommitted change to that gitlink, recursively up to
//     MaxSubmoduleDepth superprojects;
//  3. verify: HEAD names a commit and `git fsck --connectivity-only`
//     passes, for the repository and each enclosing superproject;
//  4. unpushed: HEAD is contained in some refs/remotes ref (no fetch is
//     made), for the repository and each enclosing superproject.
//
// A claimed path outside any work tree fails with CheckNoRepo before
// anything else. With no paths, Check runs verify and unpushed on the
// repository containing cwd, and returns nil when cwd is in none.
//
// The first failure is returned as a *CheckError (wrapping
// ErrFinalization); a git that cannot be run returns a *GitError; a bad cfg
// returns an error wrapping ErrInvalidConfig.
func Check(ctx context.Context, cfg Config, cwd string, paths []string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	r := newRunner(cfg.withDefaults())
	base, err := absDir(cwd)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return r.checkCwd(ctx, base)
	}
	repos, err := r.group(ctx, base, paths)
	if err != nil {
		return err
	}
	for _, rp := range repos {
		if err := r.checkDirty(ctx, rp); err != nil {
			return err
		}
	}
	targets := make(map[string][]string, len(repos)) // repo -> claimed paths
	for _, rp := range repos {
		targets[rp.top] = append(targets[rp.top], rp.paths...)
	}
	for _, rp := range repos {
		enclosing, err := r.checkSubmodule(ctx, rp.top)
		if err != nil {
			return err
		}
		for _, sup := range enclosing {
			if _, ok := targets[sup]; !ok {
				targets[sup] = nil
			}
		}
	}
	tops := make([]string, 0, len(targets))
	for top := range targets {
		tops = append(tops, top)
	}
	sort.Strings(tops)
	for _, top := range tops {
		if err := r.checkVerify(ctx, top, targets[top]); err != nil {
			return err
		}
	}
	for _, top := range tops {
		if err := r.checkUnpushed(ctx, top, targets[top]); err != nil {
			return err
		}
	}
	return nil
}

// checkCwd handles an empty path list.
func (r *runner) checkCwd(ctx context.Context, cwd string) error {
	dir, _ := existingAncestor(cwd)
	top, ok, _, err := r.toplevel(ctx, dir)
	if err != nil || !ok {
		return err // nil when cwd is in no repository: nothing to certify
	}
	if err := r.checkVerify(ctx, top, nil); err != nil {
		return err
	}
	return r.checkUnpushed(ctx, top, nil)
}

// absDir makes cwd absolute; empty means the process's directory.
func absDir(cwd string) (string, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("gitcheck: working directory: %w", err)
		}
		return wd, nil
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("gitcheck: resolve %q: %w", cwd, err)
	}
	return abs, nil
}
