package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// watchLine is what these tests read of one `agents list --watch` line.
type watchLine struct {
	SessionID string `json:"session_id"`
	Activity  string `json:"activity"`
	Removed   bool   `json:"removed"`
}

// TestWatchWithoutTTYPrintsOneJSONLinePerChange: `harn agents list
// --watch` with its output on a pipe prints one JSON line per session
// change: a real hook starts a session (a line), a prompt makes it
// working (another line); SIGINT ends the watch with exit 0.
func TestWatchWithoutTTYPrintsOneJSONLinePerChange(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	const sid = "7a7c-watch-0001"

	cmd := exec.Command(harnBin, "agents", "list", "--watch", "--interval", "100ms")
	cmd.Env = e.hookEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
	})
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	// next waits for the next line, bounded.
	next := func(what string) watchLine {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: the watch ended; stderr: %s", what, stderr.String())
			}
			var w watchLine
			if err := json.Unmarshal([]byte(l), &w); err != nil {
				t.Fatalf("%s: line %q is not JSON: %v", what, l, err)
			}
			return w
		case <-time.After(stateTimeout):
			t.Fatalf("%s: no line within %s; stderr: %s", what, stateTimeout, stderr.String())
		}
		return watchLine{}
	}

	e.hook("claude-code", claudeStart(sid, cwd))
	if w := next("after SessionStart"); w.SessionID != sid || w.Activity != "idle" {
		t.Fatalf("first line: %+v", w)
	}
	e.hook("claude-code", claudePrompt(sid, cwd))
	if w := next("after UserPromptSubmit"); w.SessionID != sid || w.Activity != "working" {
		t.Fatalf("second line: %+v", w)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines { // drain until the process closes its output
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the watch ended with %v after SIGINT; stderr: %s", err, stderr.String())
		}
	case <-time.After(cmdTimeout):
		t.Fatal("the watch did not stop after SIGINT")
	}
}

// tmux runs a tmux command on the test's own server (socket).
func tmux(t *testing.T, sock string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
	return string(out), err
}

// TestWatchInTerminalRepaintsAndQuitsOnQ runs `harn agents list --watch`
// in a real terminal (tmux): the table shows the session a hook started,
// repaints in place when a prompt makes it working, and q ends it. It
// skips without tmux, except under CI=true.
func TestWatchInTerminalRepaintsAndQuitsOnQ(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is required under CI (.ci/run installs it)")
		}
		t.Skip("tmux is not installed")
	}
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	const sid = "7a7c-tty-00001"
	e.hook("claude-code", claudeStart(sid, cwd))

	sock := filepath.Join(e.root, "tmux.sock")
	exitFile := filepath.Join(e.root, "watch.exit")
	var envs []string
	for _, kv := range e.hookEnv() {
		if k, _, _ := strings.Cut(kv, "="); k == "TMUX" || k == "TERM" || k == "NO_COLOR" {
			continue
		}
		envs = append(envs, kv)
	}
	// The shell line runs the watch, then records its exit code.
	script := filepath.Join(e.root, "watch.sh")
	body := "#!/bin/sh\n"
	for _, kv := range envs {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || strings.ContainsAny(k, " '\"$`\\") {
			continue
		}
		body += fmt.Sprintf("export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	body += fmt.Sprintf("export TERM=xterm-256color\n'%s' agents list --watch --interval 100ms\necho $? > '%s'\nsleep 30\n", harnBin, exitFile)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := tmux(t, sock, "-f", "/dev/null", "new-session", "-d", "-x", "140", "-y", "30", "-s", "w", script); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { tmux(t, sock, "kill-server") })
	screen := func() string {
		out, err := tmux(t, sock, "capture-pane", "-p", "-t", "w")
		if err != nil {
			return "capture-pane: " + err.Error() + ": " + out
		}
		return out
	}
	rowOf := func(s string) string {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(l, "> ")), sid[:6]) {
				return l
			}
		}
		return ""
	}
	eventually(t, stateTimeout, "the table shows the session", func() (bool, string) {
		s := screen()
		return strings.Contains(s, "SESSION") && strings.Contains(rowOf(s), "idle"), s
	})
	e.hook("claude-code", claudePrompt(sid, cwd))
	eventually(t, stateTimeout, "the table repaints the session as working", func() (bool, string) {
		s := screen()
		return strings.Contains(rowOf(s), "working") && strings.Count(s, "SESSION") == 1, s
	})
	if out, err := tmux(t, sock, "send-keys", "-t", "w", "q"); err != nil {
		t.Fatalf("send-keys: %v: %s", err, out)
	}
	eventually(t, stateTimeout, "q ends the watch with exit 0", func() (bool, string) {
		b, err := os.ReadFile(exitFile)
		if errors.Is(err, os.ErrNotExist) {
			return false, screen()
		}
		return strings.TrimSpace(string(b)) == "0", string(b)
	})
}
