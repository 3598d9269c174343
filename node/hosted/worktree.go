package hosted

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harn-dev/harn/util/text"
)

// WorktreeDir is where a hosted session's worktree goes, under its
// repository's top level: <repo>/.harn/worktrees/<branch>, with "/" in
// the branch as "--". The room adds the folder to the repository's
// .git/info/exclude, so the main worktree stays clean.
const WorktreeDir = ".harn/worktrees"

// gitWait bounds one git command.
const gitWait = 30 * time.Second

// ErrWorktree is a worktree the room will not remove (dirty, unpushed, in
// use) or cannot find.
var ErrWorktree = errors.New("worktree")

// Worktree is one worktree the room made.
type Worktree struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
	// Base is the ref it was asked from; BaseCommit what that was.
	Base       string    `json:"base"`
	BaseCommit string    `json:"base_commit"`
	Repo       string    `json:"repo"` // the repository's top level
	Session    string    `json:"session"`
	Created    time.Time `json:"created"`
}

// WorktreeStatus is a worktree as `harn worktrees` lists it.
type WorktreeStatus struct {
	Worktree
	// Live: its session still runs here.
	Live bool
	// Clean: git status shows no change; Unpushed counts its branch's
	// commits after the base that no remote-tracking ref holds.
	Clean    bool
	Unpushed int
	// Error says why the status could not be read (the folder is gone).
	Error string
}

// git runs the git CLI in dir, bounded, with no prompt and none of the
// repository's hooks.
func (r *Room) git(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.cfg.Git, append([]string{"-C", dir, "-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Env = append(scrubEnv(r.cfg.Environ, nil), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := text.FirstLine(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[0], text.Clip(msg, 200))
	}
	return strings.TrimSpace(out.String()), nil
}

// makeWorktree makes a worktree of dir's repository on the new branch,
// from base (HEAD when empty), for session id.
func (r *Room) makeWorktree(dir, branch, base, id string, now time.Time) (Worktree, error) {
	if strings.HasPrefix(branch, "-") || strings.ContainsAny(branch, " \t\n\\") {
		return Worktree{}, fmt.Errorf("%w: --worktree %q is not a branch name; give a name such as fix/login", ErrBadStart, text.Clip(text.OneLine(branch), 80))
	}
	if base == "" {
		base = "HEAD"
	}
	if strings.HasPrefix(base, "-") {
		return Worktree{}, fmt.Errorf("%w: --base %q is not a ref; give a branch, tag or commit", ErrBadStart, text.Clip(text.OneLine(base), 80))
	}
	top, err := r.git(dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return Worktree{}, fmt.Errorf("%w: --worktree needs --dir in a git repository: %v", ErrBadStart, err)
	}
	if top, err = filepath.EvalSymlinks(top); err != nil {
		return Worktree{}, fmt.Errorf("%w: %v", ErrBadStart, err)
	}
	if _, err := r.git(top, "check-ref-format", "--branch", branch); err != nil {
		return Worktree{}, fmt.Errorf("%w: --worktree %q is not a valid branch name", ErrBadStart, text.Clip(text.OneLine(branch), 80))
	}
	if _, err := r.git(top, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		return Worktree{}, fmt.Errorf("%w: branch %s exists in %s; --worktree makes a new branch, so give another name", ErrBadStart, branch, top)
	}
	commit, err := r.git(top, "rev-parse", "--verify", "--quiet", base+"^{commit}")
	if err != nil {
		return Worktree{}, fmt.Errorf("%w: --base %s is no commit of %s; give a branch, tag or commit", ErrBadStart, text.Clip(text.OneLine(base), 80), top)
	}
	path := filepath.Join(top, filepath.FromSlash(WorktreeDir), strings.ReplaceAll(branch, "/", "--"))
	if _, err := os.Lstat(path); err == nil {
		return Worktree{}, fmt.Errorf("%w: %s exists; give another branch", ErrBadStart, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Worktree{}, fmt.Errorf("%w: %v", ErrBadStart, err)
	}
	r.exclude(top)
	if _, err := r.git(top, "worktree", "add", "-b", branch, path, commit); err != nil {
		return Worktree{}, fmt.Errorf("%w: %v", ErrBadStart, err)
	}
	w := Worktree{Path: path, Branch: branch, Base: base, BaseCommit: commit, Repo: top, Session: id, Created: now.UTC()}
	r.mu.Lock()
	r.wts = append(r.wts, w)
	r.mu.Unlock()
	if err := r.save(); err != nil {
		r.log.Warn("hosted: state not saved", "err", err)
	}
	return w, nil
}

// exclude adds WorktreeDir to the repository's info/exclude once.
func (r *Room) exclude(top string) {
	common, err := r.git(top, "rev-parse", "--git-common-dir")
	if err != nil {
		return
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(top, common)
	}
	path := filepath.Join(common, "info", "exclude")
	line := "/" + WorktreeDir + "/"
	if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(line)) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "\n# worktrees of harn's hosted sessions\n%s\n", line)
}

// dropWorktree removes a worktree nothing ran in (a start that failed).
func (r *Room) dropWorktree(w Worktree) {
	if _, err := r.git(w.Repo, "worktree", "remove", "--force", w.Path); err != nil {
		r.log.Warn("hosted: an unused worktree was not removed", "path", w.Path, "err", err)
	}
	if _, err := r.git(w.Repo, "branch", "-D", w.Branch); err != nil {
		r.log.Warn("hosted: an unused branch was not removed", "branch", w.Branch, "err", err)
	}
	r.forget(w.Path)
}

func (r *Room) forget(path string) {
	r.mu.Lock()
	for i, w := range r.wts {
		if w.Path == path {
			r.wts = append(r.wts[:i:i], r.wts[i+1:]...)
			break
		}
	}
	r.mu.Unlock()
	if err := r.save(); err != nil {
		r.log.Warn("hosted: state not saved", "err", err)
	}
}

// Worktrees lists the worktrees this node made, with their session and
// whether they are clean.
func (r *Room) Worktrees() []WorktreeStatus {
	r.mu.Lock()
	wts := append([]Worktree(nil), r.wts...)
	r.mu.Unlock()
	out := make([]WorktreeStatus, 0, len(wts))
	for _, w := range wts {
		out = append(out, r.status(w))
	}
	return out
}

func (r *Room) status(w Worktree) WorktreeStatus {
	st := WorktreeStatus{Worktree: w, Live: r.Has(w.Session)}
	porcelain, err := r.git(w.Path, "status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		st.Error = err.Error()
		return st
	}
	st.Clean = porcelain == ""
	n, err := r.git(w.Path, "rev-list", "--count", w.BaseCommit+"..HEAD", "--not", "--remotes")
	if err != nil {
		st.Error = err.Error()
		return st
	}
	st.Unpushed, _ = strconv.Atoi(n)
	return st
}

// RemoveWorktree removes the worktree at path (or of that branch, or of
// that session). A dirty one, or one with unpushed commits, is refused
// without force; one whose session runs is refused always. Its branch
// goes too when it holds no commit after its base; otherwise the branch
// stays (nothing committed is lost) and the message says so.
func (r *Room) RemoveWorktree(which string, force bool) (string, error) {
	r.mu.Lock()
	var w *Worktree
	for i := range r.wts {
		x := &r.wts[i]
		if x.Path == which || x.Branch == which || x.Session == which || filepath.Base(x.Path) == which {
			w2 := *x
			w = &w2
			break
		}
	}
	r.mu.Unlock()
	if w == nil {
		return "", fmt.Errorf("%w: no worktree %q on node %s; name one it lists (its path, branch or session)", ErrWorktree, text.Clip(text.OneLine(which), 120), r.cfg.Node)
	}
	st := r.status(*w)
	if st.Live {
		return "", fmt.Errorf("%w: %s is the worktree of the running session %s; stop it first (harn agents stop %s)", ErrWorktree, w.Path, w.Session, w.Session)
	}
	if _, err := os.Stat(w.Path); errors.Is(err, os.ErrNotExist) {
		r.git(w.Repo, "worktree", "prune")
		r.forget(w.Path)
		return fmt.Sprintf("%s was already gone; forgotten", w.Path), nil
	}
	if !force && st.Error != "" {
		return "", fmt.Errorf("%w: %s: %s; pass --force to remove it anyway", ErrWorktree, w.Path, st.Error)
	}
	if !force && !st.Clean {
		return "", fmt.Errorf("%w: %s has uncommitted changes; commit them, or pass --force to lose them", ErrWorktree, w.Path)
	}
	if !force && st.Unpushed > 0 {
		return "", fmt.Errorf("%w: branch %s has %d commit(s) no remote holds; push them, or pass --force (the branch stays)", ErrWorktree, w.Branch, st.Unpushed)
	}
	args := []string{"worktree", "remove"}
	if force {
		args = append(args, "--force")
	}
	if _, err := r.git(w.Repo, append(args, w.Path)...); err != nil {
		return "", fmt.Errorf("%w: %v", ErrWorktree, err)
	}
	msg := "removed " + w.Path
	if n, err := r.git(w.Repo, "rev-list", "--count", w.BaseCommit+".."+"refs/heads/"+w.Branch); err == nil && n == "0" {
		if _, err := r.git(w.Repo, "branch", "-D", w.Branch); err == nil {
			msg += " and its branch " + w.Branch
		}
	} else {
		msg += "; its branch " + w.Branch + " keeps its commits"
	}
	r.forget(w.Path)
	return msg, nil
}
