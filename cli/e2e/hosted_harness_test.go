package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// Helpers of the hosted-terminal tests: the interactive fake agent
// (internal/testsupport/fakeagent) built once, a launcher config that
// runs it with the installed hook, and a harn command in a real
// pseudo-terminal.

var (
	hostedFakeOnce sync.Once
	hostedFake     string
	hostedFakeErr  error
)

// buildHostedFake builds internal/testsupport/fakeagent once.
func buildHostedFake(t *testing.T) string {
	t.Helper()
	hostedFakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "harn-e2e-hosted-")
		if err != nil {
			hostedFakeErr = err
			return
		}
		bin := filepath.Join(dir, "fakeagent")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/harn-dev/harn/internal/testsupport/fakeagent").CombinedOutput()
		if err != nil {
			hostedFakeErr = errors.New(string(out))
			return
		}
		hostedFake = bin
	})
	if hostedFakeErr != nil {
		t.Fatalf("build fakeagent: %v", hostedFakeErr)
	}
	return hostedFake
}

// hostedLauncher is the launcher NAME = the fake agent that calls the
// installed hook (harn-hook beside harn) and logs what it reads to log.
func hostedLauncher(t *testing.T, log string, turn string) []string {
	t.Helper()
	hook := filepath.Join(filepath.Dir(harnBin), "harn-hook")
	return []string{buildHostedFake(t), "--hook", hook + " hook claude-code", "--log", log, "--turn", turn}
}

// gitRepoAt makes a git repository with one commit at dir.
func gitRepoAt(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	real, _ := filepath.EvalSymlinks(dir)
	return real
}

// inputLog is what the fake agent read from its terminal.
func inputLog(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

// ptyProc is a harn command in a pseudo-terminal.
type ptyProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	f    *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// startPTY runs harn args with environ in a new rows x cols terminal.
func startPTY(t *testing.T, environ []string, rows, cols uint16, args ...string) *ptyProc {
	t.Helper()
	cmd := exec.Command(harnBin, args...)
	cmd.Env = append(environ, "TERM=xterm-256color")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	p := &ptyProc{t: t, cmd: cmd, f: f, done: make(chan struct{})}
	go func() {
		buf := make([]byte, 8192)
		for {
			n, err := f.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				break
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
		f.Close()
	})
	return p
}

func (p *ptyProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitFor waits until the terminal showed s.
func (p *ptyProc) waitFor(what, s string) {
	p.t.Helper()
	eventually(p.t, stateTimeout, what, func() (bool, string) {
		o := p.output()
		return strings.Contains(o, s), o[max(0, len(o)-600):]
	})
}

func (p *ptyProc) write(b string) {
	p.t.Helper()
	if _, err := p.f.Write([]byte(b)); err != nil {
		p.t.Fatal(err)
	}
}

// exit waits for the command's exit and returns its code.
func (p *ptyProc) exit() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(stateTimeout):
		p.t.Fatalf("harn %v did not exit; its terminal: %s", p.cmd.Args, p.output())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}
