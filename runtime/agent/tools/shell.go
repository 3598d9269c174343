package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/harn-dev/harn/util/procguard"
)

// Shell bounds.
const (
	DefaultShellTimeout = 2 * time.Minute
	MaxShellTimeout     = 10 * time.Minute
	DefaultShellGrace   = 2 * time.Second
)

type shellArgs struct {
	Command   string `json:"command"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// capWriter keeps the first n bytes written and counts the rest.
type capWriter struct {
	mu    sync.Mutex
	buf   []byte
	n     int
	total int64
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total += int64(len(p))
	if room := w.n - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *capWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := string(w.buf)
	if w.total > int64(len(w.buf)) {
		s += fmt.Sprintf("\n[output cut: %d of %d bytes shown]", len(w.buf), w.total)
	}
	return s
}

// runShell runs sh -c COMMAND in dir, in its own process group. On the
// end of ctx or the timeout the group gets SIGINT, then SIGKILL after the
// grace period; when the shell exits, what it left running in its group is
// killed too. stdout and stderr are merged and bounded. The grace timer is
// on the box's clock; the final drain of the output pipe is bounded by the
// same length in real time. A stopped shell whose output is still held
// after that (a process left the group and runs on) ends with ErrOutlived.
func (b *Toolbox) runShell(ctx context.Context, dir string, raw json.RawMessage) (string, error) {
	var a shellArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Command == "" || len(a.Command) > 64<<10 {
		return "", fmt.Errorf("%w: shell needs a command of 1 to 65536 bytes", ErrBadArgs)
	}
	if a.TimeoutMS < 0 {
		return "", fmt.Errorf("%w: timeout_ms must be positive", ErrBadArgs)
	}
	timeout := b.shellTimeout
	if a.TimeoutMS > 0 {
		timeout = min(time.Duration(a.TimeoutMS)*time.Millisecond, MaxShellTimeout)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: working directory %q is not a folder", ErrConfig, dir)
	}
	out := &capWriter{n: max(b.maxOut-128, 0)} // room for the note
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("shell: %w", err)
	}
	cmd, ready, err := procguard.Command(b.guard, []string{"/bin/sh", "-c", a.Command})
	if err != nil {
		_, _ = pr.Close(), pw.Close()
		return "", fmt.Errorf("shell: %w", err)
	}
	cmd.Dir, cmd.Env = dir, toolEnv() // env.go: no secret of the node's
	cmd.Stdout, cmd.Stderr = pw, pw   // a file: Wait returns when the shell exits, not when the pipe drains
	done, err := procguard.Start(cmd)
	procguard.Started(cmd)
	_ = pw.Close()
	if err != nil {
		_ = pr.Close()
		if ready != nil {
			_ = ready.Close()
		}
		return "", fmt.Errorf("shell: %w", err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, pr)
	}()
	pgid := cmd.Process.Pid
	release, err := b.recordGroup(pgid, ready)
	if err != nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		_ = pr.Close()
		<-copied
		return "", fmt.Errorf("shell: %w", err)
	}
	defer release()
	// drain ends the call: what is left in the group is killed, and the
	// output is read until the pipe closes (bounded, in case a process
	// left the group holding it).
	drain := func() (string, bool) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		t := time.NewTimer(b.shellGrace) //clock:real a pipe drains in real time, whatever the box's clock says
		defer t.Stop()
		held := false
		select {
		case <-copied:
		case <-t.C:
			held = true
			_ = pr.Close()
			<-copied
		}
		_ = pr.Close()
		return out.String(), held
	}

	tm := b.clock.NewTimer(timeout)
	defer tm.Stop()
	var why error
	select {
	case err := <-done:
		o, _ := drain() // a background job of a finished command is the command's own business
		return exitText(o, err), nil
	case <-ctx.Done():
		why = ctx.Err()
	case <-tm.C():
		why = fmt.Errorf("%w after %s", ErrTimeout, timeout)
	}
	_ = syscall.Kill(-pgid, syscall.SIGINT)
	grace := b.clock.NewTimer(b.shellGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C():
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	o, held := drain()
	if held {
		// something the stopped shell started left its group and runs on
		why = fmt.Errorf("%w: %w", ErrOutlived, why)
	}
	return o, why
}

func exitText(out string, err error) string {
	if err == nil {
		return out
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out + fmt.Sprintf("\n[exit status %d]", ee.ExitCode())
	}
	return out + "\n[" + err.Error() + "]"
}

// recordGroup tells OnGroup of the group pgid leads, then lets its
// command run (the guard's go-ahead). It returns the group's release.
func (b *Toolbox) recordGroup(pgid int, ready *os.File) (func(), error) {
	release := func() {}
	if b.onGroup != nil {
		g, err := procguard.GroupOf(pgid)
		if err == nil {
			release, err = b.onGroup(g)
		}
		if err != nil {
			if ready != nil {
				_ = ready.Close()
			}
			return nil, fmt.Errorf("the tool's process group was not recorded, so it does not run: %w", err)
		}
	}
	if ready != nil {
		_, _ = ready.Write([]byte{1})
		_ = ready.Close()
	}
	return release, nil
}
