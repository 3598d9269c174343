package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/cli/install"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/util/procinfo"
	"github.com/harn-dev/harn/util/text"
)

// gitHookBudget bounds one git hook: it never holds a commit longer.
const gitHookBudget = 2 * time.Second

// ErrGit: git could not tell where the repository or its hooks are.
var ErrGit = errors.New("git")

// errCommitRefused is the pre-commit hook's refusal (exit 4, which the
// hook's region passes on to git).
var errCommitRefused = &hook.SilentError{Code: hook.ExitRefused}

// newHookGitCmd is `harn hook git pre-commit|post-commit|post-checkout`,
// run by the regions `harn hook install git` writes.
func newHookGitCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "git pre-commit|post-commit|post-checkout",
		Short: "the commit guard, run by git's hooks: refuse commits of files other sessions claim; prune clean claims",
		Long: `pre-commit refuses a commit whose staged paths another live session claims,
naming each path and its holder (exit 4; ` + "`git commit --no-verify`" + ` skips it).
post-commit and post-checkout release the committing session's claims on
paths that are now clean. Each is bounded (2 s) and fails open with a
one-line warning when no node answers.`,
		Args:               exactArgs(1, "the git hook: pre-commit, post-commit or post-checkout"),
		FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true},
		RunE: func(c *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(context.Background(), gitHookBudget)
			defer cancel()
			var err error
			switch args[0] {
			case "pre-commit":
				err = gitPreCommit(ctx, c)
			case "post-commit", "post-checkout":
				err = gitPrune(ctx, c)
			default:
				return hook.UsageErr(fmt.Errorf("hook git: unknown hook %q: use pre-commit, post-commit or post-checkout", args[0]))
			}
			if err == errCommitRefused {
				return err
			}
			if err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "harn: commit guard skipped: %s\n", text.Clip(text.FirstLine(err.Error()), 200))
			}
			return nil
		},
	}
	return c
}

// gitOut runs git in the working directory (the hook's environment, its
// GIT_DIR and index, passes through).
func gitOut(ctx context.Context, args ...string) ([]byte, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w %s: %w (%s)", ErrGit, strings.Join(args, " "), err, text.Clip(text.OneLine(errb.String()), 120))
	}
	return out.Bytes(), nil
}

// gitRepo is the repository the hook runs in: its identity for claims.
func gitRepo(ctx context.Context) (string, error) {
	top, err := gitOut(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(string(top))
	info, ok := hook.RepoAt(t)
	if !ok {
		info = hook.GitInfo{Top: t}
		if o, err := gitOut(ctx, "config", "--get", "remote.origin.url"); err == nil {
			info.Origin = strings.TrimSpace(string(o))
		}
	}
	return claimwire.RepoIdentity(info.Origin, info.Top), nil
}

func splitZ(b []byte) []string {
	var out []string
	for _, f := range bytes.Split(b, []byte{0}) {
		if len(f) > 0 {
			out = append(out, string(f))
		}
	}
	return out
}

// gitNode dials the local node without starting one: a commit does not
// wait for a node to boot.
func gitNode(c *cobra.Command) (*client, hook.Place, error) {
	p := hook.PlaceOf(c)
	if dead, err := hook.ProbeSocket(p.Socket); err != nil || dead {
		return nil, p, fmt.Errorf("%w on %s", hook.ErrNoNode, p.Socket)
	}
	cl, err := dial(p)
	return cl, p, err
}

// committingSession is the session whose agent process is an ancestor of
// this hook, "" for none.
func committingSession(ctx context.Context, cl *client) string {
	for _, k := range append([]string{"HARN_SESSION"}, agentSessionEnv...) {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	anc, _ := procinfo.Ancestry(os.Getpid(), 32)
	req := &api.WhoamiRequest{}
	for _, pr := range anc {
		req.Ancestry = append(req.Ancestry, &api.Proc{Pid: int32(pr.PID), Start: pr.Start})
	}
	res, err := cl.api.Whoami(ctx, req)
	if err != nil {
		return ""
	}
	st, err := stateOf(res.GetSession())
	if err != nil || st.Ended {
		return ""
	}
	return st.SessionID
}

func gitPreCommit(ctx context.Context, c *cobra.Command) error {
	staged, err := gitOut(ctx, "diff", "--cached", "--name-only", "-z")
	if err != nil {
		return err
	}
	paths := splitZ(staged)
	if len(paths) == 0 {
		return nil
	}
	repo, err := gitRepo(ctx)
	if err != nil {
		return err
	}
	cl, p, err := gitNode(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	session := committingSession(ctx, cl)
	var reqs []claimwire.Request
	for len(paths) > 0 {
		n := min(len(paths), claimwire.MaxPaths)
		reqs = append(reqs, claimwire.Request{Repo: repo, Paths: paths[:n]})
		paths = paths[n:]
	}
	res, err := coord(ctx, cl, p, wire.CoordCheck, wire.CoordBody{Session: session, Claims: reqs})
	if err != nil {
		return err
	}
	if len(res.Holders) == 0 {
		return nil
	}
	warn := res.Mode == string(claimwire.ModeWarn)
	printHolders(c.ErrOrStderr(), res.Holders, warn)
	if warn {
		return nil
	}
	return errCommitRefused
}

func printHolders(w io.Writer, hs []claimwire.Holder, warn bool) {
	if warn {
		fmt.Fprintln(w, "harn (warning): this commit holds files other sessions claim:")
	} else {
		fmt.Fprintln(w, "harn: commit refused: it holds files other live sessions claim:")
	}
	for _, h := range hs {
		who := text.Clip(text.OneLine(h.Name), 40)
		if who == "" {
			who = "session " + text.Clip(text.OneLine(h.Session), 40)
		}
		line := fmt.Sprintf("  %s  claimed by %s", text.Clip(text.OneLine(h.Path), 160), who)
		if h.Agent != "" {
			line += " (" + text.Clip(text.OneLine(h.Agent), 20) + ")"
		}
		if h.Node != "" {
			line += " on node " + text.Clip(text.OneLine(h.Node), 40)
		}
		if h.Task != "" {
			line += fmt.Sprintf(", task %q", text.Clip(text.OneLine(h.Task), 80))
		}
		if h.Unreachable {
			line += " (unreachable; the claim still holds)"
		}
		fmt.Fprintln(w, line)
	}
	if !warn {
		fmt.Fprintf(w, "Unstage them, ask the holder, have the operator run `harn agents release-claim --session %s`, or commit with --no-verify.\n",
			text.Clip(text.OneLine(hs[0].Session), 64))
	}
}

// gitPrune releases the committing session's claims on paths of this
// repository that are clean now.
func gitPrune(ctx context.Context, c *cobra.Command) error {
	cl, p, err := gitNode(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	session := committingSession(ctx, cl)
	if session == "" {
		return nil
	}
	repo, err := gitRepo(ctx)
	if err != nil {
		return err
	}
	res, err := coord(ctx, cl, p, wire.CoordClaims, wire.CoordBody{Session: session})
	if err != nil {
		return err
	}
	var mine []string
	for _, cl := range res.Claims {
		if cl.Repo == repo {
			mine = append(mine, cl.Path)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	st, err := gitOut(ctx, "status", "--porcelain", "-z", "--untracked-files=all")
	if err != nil {
		return err
	}
	dirty := map[string]bool{}
	for _, f := range splitZ(st) {
		if len(f) > 3 && f[2] == ' ' {
			dirty[f[3:]] = true
		} else {
			dirty[f] = true // a rename's source
		}
	}
	var clean []string
	for _, path := range mine {
		if !dirty[path] {
			clean = append(clean, path)
		}
	}
	for len(clean) > 0 {
		n := min(len(clean), claimwire.MaxPaths)
		if _, err := coord(ctx, cl, p, wire.CoordRelease, wire.CoordBody{Session: session,
			Claims: []claimwire.Request{{Repo: repo, Paths: clean[:n]}}}); err != nil {
			return err
		}
		clean = clean[n:]
	}
	return nil
}

// runGitInstall is `harn hook install|uninstall git`: the commit guard in
// this repository's hooks folder (core.hooksPath honoured).
func runGitInstall(c *cobra.Command, use string) error {
	if f := c.Flags().Lookup("scope"); f != nil && f.Changed && f.Value.String() != "repo" {
		return hook.UsageErr(fmt.Errorf("hook %s git: the commit guard has one scope, --scope repo (this repository)", use))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := gitOut(ctx, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return hook.UsageErr(fmt.Errorf("hook %s git: run it inside a git repository: %w", use, err))
	}
	dir, err := filepath.Abs(strings.TrimSpace(string(out)))
	if err != nil {
		return err
	}
	var rep install.GitReport
	if use == "install" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		rep, err = install.InstallGit(dir, hookBinary(exe, exec.LookPath))
		if err != nil {
			return hook.WithCode(hook.ExitRefused, err)
		}
	} else if rep, err = install.UninstallGit(dir); err != nil {
		return hook.WithCode(hook.ExitRefused, err)
	}
	if hook.AsJSON(c) {
		return hook.WriteJSON(c, rep)
	}
	switch {
	case len(rep.Changed) == 0:
		fmt.Fprintf(c.OutOrStdout(), "the commit guard in %s: nothing to change\n", text.Sanitize(dir))
	case use == "install":
		fmt.Fprintf(c.OutOrStdout(), "the commit guard is in %s (%s)\n", text.Sanitize(dir), strings.Join(rep.Changed, ", "))
	default:
		fmt.Fprintf(c.OutOrStdout(), "the commit guard is out of %s (%s)\n", text.Sanitize(dir), strings.Join(rep.Changed, ", "))
	}
	for _, h := range rep.Chained {
		fmt.Fprintf(c.OutOrStdout(), "  %s was not a shell script: kept as %s.harn-chained and run first\n", h, h)
	}
	return nil
}
