package gitcheck

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// Output caps: status, fsck and ref listings are only inspected for
// emptiness and a few leading entries.
const (
	maxStdout = 4 << 20
	maxStderr = 64 << 10
)

// runner runs git with a fixed, clean environment.
type runner struct {
	cfg Config
	env []string
}

func newRunner(cfg Config) *runner {
	env := []string{
		"LC_ALL=C",
		"LANG=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_LITERAL_PATHSPECS=1",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_ADVICE=0",
	}
	for _, k := range []string{"PATH", "HOME", "SYSTEMROOT"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return &runner{cfg: cfg, env: env}
}

// result is a completed git call.
type result struct {
	stdout []byte
	stderr string
	code   int
}

func (res result) ok() bool { return res.code == 0 }

// firstLine is the first non-empty line of stderr, or of stdout when
// stderr is empty, for a Detail.
func (res result) firstLine() string {
	for _, s := range []string{res.stderr, string(res.stdout)} {
		if line := firstLineOf(s); line != "" {
			return line
		}
	}
	return "exit status " + strconv.Itoa(res.code)
}

// run runs `git -C dir args...`. A non-zero exit is a result; only a git
// that could not run to completion (missing, timed out, ctx ended) is an
// error, a *GitError.
func (r *runner) run(ctx context.Context, dir string, args ...string) (result, error) {
	if err := ctx.Err(); err != nil {
		return result{}, &GitError{Dir: dir, Args: args, Err: err}
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	full := append([]string{"-C", dir, "-c", "core.fsmonitor=false"}, args...)
	cmd := exec.CommandContext(cctx, r.cfg.Git, full...)
	cmd.Env = r.env
	cmd.Dir = dir
	cmd.WaitDelay = time.Second
	stdout := &capped{max: maxStdout}
	stderr := &capped{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if cerr := cctx.Err(); cerr != nil {
		return result{}, &GitError{Dir: dir, Args: args, Err: cerr}
	}
	res := result{stdout: stdout.buf, stderr: string(stderr.buf)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.code = exit.ExitCode() // -1 when killed by a signal
	default:
		return result{}, &GitError{Dir: dir, Args: args, Err: err}
	}
	return res, nil
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf []byte
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - len(c.buf); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		c.buf = append(c.buf, p[:room]...)
	}
	return len(p), nil
}
