package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// watchPane runs `harn agents list --watch` in a tmux pane of its own
// server, with environ, and returns the pane's screen reader and a key
// sender.
type watchPane struct {
	t    *testing.T
	sock string
}

func startWatchPane(t *testing.T, root string, environ []string, cols, rows int) *watchPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is required under CI (.ci/run installs it)")
		}
		t.Skip("tmux is not installed")
	}
	sock := filepath.Join(root, "tmux-acts.sock")
	script := filepath.Join(root, "watch-acts.sh")
	body := "#!/bin/sh\n"
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || k == "TMUX" || k == "TERM" || k == "NO_COLOR" || strings.ContainsAny(k, " '\"$`\\") {
			continue
		}
		body += fmt.Sprintf("export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	body += fmt.Sprintf("export TERM=xterm-256color\n'%s' agents list --watch --interval 100ms\nsleep 30\n", harnBin)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := tmux(t, sock, "-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), "-s", "w", script); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { tmux(t, sock, "kill-server") })
	return &watchPane{t: t, sock: sock}
}

func (w *watchPane) screen() string {
	out, err := tmux(w.t, w.sock, "capture-pane", "-p", "-t", "w")
	if err != nil {
		return "capture-pane: " + err.Error() + ": " + out
	}
	return out
}

func (w *watchPane) keys(keys ...string) {
	w.t.Helper()
	if out, err := tmux(w.t, w.sock, append([]string{"send-keys", "-t", "w"}, keys...)...); err != nil {
		w.t.Fatalf("send-keys %v: %v: %s", keys, err, out)
	}
}

// selectedLine is the table line the selection marker is on.
func selectedLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "> ") {
			return l
		}
	}
	return ""
}

// rowLine is the table line of the session whose id starts with prefix.
func rowLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(l, "> ")), prefix) {
			return l
		}
	}
	return ""
}

// sel moves the selection onto the row of the session starting with
// prefix: j or k toward it, each step waiting for the repaint, bounded.
func (w *watchPane) sel(prefix string) {
	w.t.Helper()
	for step := 0; step < 40; step++ {
		s := w.screen()
		si, ti := -1, -1
		for i, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "> ") {
				si = i
			}
			if strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(l, "> ")), prefix) {
				ti = i
			}
		}
		switch {
		case si >= 0 && si == ti:
			return
		case si < 0 || ti < 0:
			time.Sleep(50 * time.Millisecond) // not painted yet
			continue
		case ti > si:
			w.keys("j")
		default:
			w.keys("k")
		}
		before := selectedLine(s)
		for j := 0; j < 40 && selectedLine(w.screen()) == before; j++ { // the repaint
			time.Sleep(25 * time.Millisecond)
		}
	}
	w.t.Fatalf("cannot select the row of %s:\n%s", prefix, w.screen())
}

// waitScreen waits until the screen holds want.
func (w *watchPane) waitScreen(what, want string) string {
	w.t.Helper()
	var last string
	eventually(w.t, stateTimeout, what, func() (bool, string) {
		last = w.screen()
		return strings.Contains(last, want), last
	})
	return last
}

// TestWatchKeysApproveDenySteerAndCancelTheSelectedRow drives the live
// table in a real terminal (tmux): `a` then y on a needs_input row
// approves its open request (the waiting hook gets the allow and the row
// leaves needs_input), `d` then y denies another's; Enter opens the
// detail and Esc goes back; `s` steers a running harn task and `c` then
// y cancels it; a steer of the ended task shows the node's refusal in the
// status bar.
func TestWatchKeysApproveDenySteerAndCancelTheSelectedRow(t *testing.T) {
	e, cmd := taskEnv(t)
	cwd := t.TempDir()
	const appSID, denSID = "wa-app-000001", "wd-den-000002"
	perm := func(sid, command string) string {
		return `{"session_id":"` + sid + `","cwd":"` + cwd + `","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"` + command + `"}}`
	}
	e.hook("claude-code", claudeStart(appSID, cwd))
	e.hook("claude-code", claudeStart(denSID, cwd))
	hookOut := func(sid, command string) chan result {
		ch := make(chan result, 1)
		go func() {
			ch <- run(t, e.hookEnv(), perm(sid, command), "hook", "claude-code", "--remote-approve", "--approve-wait", "60s")
		}()
		return ch
	}
	approved := hookOut(appSID, "make test")
	denied := hookOut(denSID, "rm -rf build")
	eventually(t, stateTimeout, "both requests are pending", func() (bool, string) {
		out := e.ok("agents", "pending")
		return strings.Count(out, "tool:     Bash") == 2, out
	})
	flag := filepath.Join(e.root, "go")
	task := e.task("start", "--exec", cmd+" --input-format stream-json", "wait-file="+flag)
	eventually(t, stateTimeout, "the harn task runs", func() (bool, string) {
		v := e.task("show", task.Task.ID)
		return v.Task.State == "running", v.Task.State
	})

	w := startWatchPane(t, e.root, e.hookEnv(), 200, 50)
	s := w.waitScreen("the table shows the rows and the key help", "a approve")
	for _, p := range []string{appSID[:6], denSID[:6], task.Session[:6]} {
		if rowLine(s, p) == "" {
			eventually(t, stateTimeout, "row "+p, func() (bool, string) { s = w.screen(); return rowLine(s, p) != "", s })
		}
	}

	// Approve: the confirmation names the tool; y sends it.
	w.sel(appSID[:6])
	w.keys("a")
	w.waitScreen("the approval asks y/n", "? y/n")
	if s := w.screen(); !strings.Contains(s, "approve Bash") || !strings.Contains(s, appSID) {
		t.Fatalf("the confirmation must name the tool and the session:\n%s", s)
	}
	w.keys("y")
	w.waitScreen("the status bar shows the approval", "approved ")
	select {
	case r := <-approved:
		if !strings.Contains(r.stdout, `"behavior":"allow"`) {
			t.Fatalf("the approved hook: %v", r)
		}
	case <-time.After(stateTimeout):
		t.Fatal("the approved hook did not answer")
	}
	eventually(t, stateTimeout, "the approved row leaves needs_input", func() (bool, string) {
		s := w.screen()
		l := rowLine(s, appSID[:6])
		return l != "" && !strings.Contains(l, "needs_input"), s
	})

	// Deny the other.
	w.sel(denSID[:6])
	w.keys("d")
	w.waitScreen("the denial asks y/n", "deny Bash")
	w.keys("y")
	w.waitScreen("the status bar shows the denial", "denied ")
	select {
	case r := <-denied:
		if !strings.Contains(r.stdout, `"behavior":"deny"`) {
			t.Fatalf("the denied hook: %v", r)
		}
	case <-time.After(stateTimeout):
		t.Fatal("the denied hook did not answer")
	}

	// Detail and back.
	w.sel(task.Session[:6])
	w.keys("Enter")
	w.waitScreen("Enter opens the detail", "esc back")
	w.keys("Escape")
	w.waitScreen("Esc goes back to the table", "a approve")

	// Steer the running task.
	w.sel(task.Session[:6])
	w.keys("s")
	w.waitScreen("s opens the steer line", "enter sends")
	w.keys("-l", "a steer from the watch")
	w.waitScreen("the typed line shows", "a steer from the watch")
	w.keys("Enter")
	w.waitScreen("the status bar shows the steer", "steered "+task.Session+": delivered")

	// Cancel it.
	w.keys("c")
	w.waitScreen("the cancel asks y/n", "cancel task "+task.Task.ID)
	w.keys("y")
	e.waitTask(task.Task.ID, "cancelled")

	// A refused action: steering the ended task.
	w.sel(task.Session[:6])
	w.keys("s")
	w.waitScreen("s opens the steer line again", "enter sends")
	w.keys("-l", "nobody listens")
	w.keys("Enter")
	s = w.waitScreen("the refusal shows in the status bar", "refused: ")
	if !strings.Contains(s, "no active task") {
		t.Fatalf("the refusal must give the node's reason:\n%s", s)
	}
}
