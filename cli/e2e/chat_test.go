package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// The TUI of harn's own agent (harn chat, harn alone, harn attach), driven
// in a real terminal (tmux: send-keys and capture-pane) against the
// scripted model server.

// chatPane is a tmux server of its own running one harn TUI.
type chatPane struct {
	*watchPane
	name string
}

// startChat runs harn with args in a tmux pane of its own server, in dir,
// with environ.
func startChat(t *testing.T, root, name, dir string, environ []string, args ...string) *chatPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is required under CI (.ci/run installs it)")
		}
		t.Skip("tmux is not installed")
	}
	sock := filepath.Join(root, "tmux-"+name+".sock")
	script := filepath.Join(root, name+".sh")
	body := "#!/bin/sh\n"
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || k == "TMUX" || k == "TERM" || k == "NO_COLOR" || strings.ContainsAny(k, " '\"$`\\") {
			continue
		}
		body += fmt.Sprintf("export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	q := []string{"'" + harnBin + "'"}
	for _, a := range args {
		q = append(q, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	body += fmt.Sprintf("export TERM=xterm-256color\ncd '%s'\n%s\necho harn-exited-$?\nsleep 30\n", dir, strings.Join(q, " "))
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := tmux(t, sock, "-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "40", "-s", "w", script); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	p := &chatPane{watchPane: &watchPane{t: t, sock: sock}, name: name}
	t.Cleanup(p.kill)
	return p
}

// kill ends the TUI with its tmux server (the pane's processes get SIGHUP).
func (p *chatPane) kill() { tmux(p.t, p.sock, "kill-server") }

// typeLine types s literally, then the key that sends it.
func (p *chatPane) typeLine(s, key string) {
	p.t.Helper()
	p.keys("-l", s)
	p.waitScreen("the input shows "+s, "❯ "+s)
	p.keys(key)
}

// transcriptOf is the screen between its header and what is below the
// transcript (an approval box, the session's lines): the session's lines.
func transcriptOf(s string) string {
	var out []string
	for i, l := range strings.Split(s, "\n") {
		if i == 0 {
			continue
		}
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "╭") || strings.HasPrefix(t, "context:") || strings.HasPrefix(t, "queue:") || strings.HasPrefix(t, "children:") {
			break
		}
		if t != "" {
			out = append(out, strings.TrimRight(l, " "))
		}
	}
	return strings.Join(out, "\n")
}

// lastUser is the text of a request's last user message.
func lastUser(req map[string]any) string {
	ms := modeltest.Messages(req)
	for i := len(ms) - 1; i >= 0; i-- {
		if strings.HasPrefix(ms[i], "user:") {
			return strings.TrimPrefix(ms[i], "user:")
		}
	}
	return ""
}

func requestsAtLeast(t *testing.T, m *modeltest.Server, n int) []map[string]any {
	t.Helper()
	var reqs []map[string]any
	eventually(t, stateTimeout, fmt.Sprintf("%d model requests", n), func() (bool, string) {
		reqs = m.Requests()
		return len(reqs) >= n, fmt.Sprint(len(reqs))
	})
	return reqs
}

func chatArgs(m *modeltest.Server) []string {
	return []string{"chat", "--provider-url", m.URL(), "--model", "test-model", "--profile", "full"}
}

// Enter mid-turn steers the running task: the steer reaches the model at
// the step boundary (the next request carries it, the held one did not);
// Alt+Enter and Tab queue follow-ups that run after the turn, in order.
func TestChatEnterSteersAtTheStepBoundaryAltEnterAndTabQueueFollowUps(t *testing.T) {
	e := askEnv(t)
	wd := t.TempDir()
	f := filepath.Join(wd, "notes.txt")
	os.WriteFile(f, []byte("pelican"), 0o600)
	hold := make(chan struct{})
	first := modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "read", Args: `{"path":"` + f + `"}`})
	first.Hold = hold
	m := modeltest.New(t, first, modeltest.Text("steered answer"), modeltest.Text("answer A"), modeltest.Text("answer B"))
	p := startChat(t, e.root, "steer", wd, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), chatArgs(m)...)
	p.waitScreen("the TUI is up", "Enter steer")
	p.typeLine("read the notes", "Enter")
	p.waitScreen("the prompt is on screen", "❯ read the notes")
	requestsAtLeast(t, m, 1)

	start := time.Now()
	p.typeLine("mind the pelican", "Enter")
	p.waitScreen("the steer is acknowledged", ": delivered at the next step boundary")
	t.Logf("keystroke to steer acknowledged on screen (local): %v", time.Since(start))
	p.typeLine("then A", "M-Enter")
	p.waitScreen("Alt+Enter queued a follow-up", "queued (position 1)")
	p.typeLine("then B", "Tab")
	p.waitScreen("Tab queued a follow-up", "queue: 2 waiting")
	if s := p.screen(); !strings.Contains(s, "then A") || !strings.Contains(s, "then B") {
		t.Fatalf("the queue line must show the follow-ups:\n%s", s)
	}
	close(hold)

	reqs := requestsAtLeast(t, m, 4)
	p.waitScreen("both follow-ups ran", "answer B")
	if modeltest.Contains(modeltest.Messages(reqs[0]), "mind the pelican") {
		t.Fatal("the steer reached the model before the step boundary")
	}
	if got := lastUser(reqs[1]); got != "mind the pelican" {
		t.Fatalf("the request after the step boundary carries %q, not the steer: %v", got, modeltest.Messages(reqs[1]))
	}
	if !modeltest.Contains(modeltest.Messages(reqs[1]), "pelican") || modeltest.Contains(modeltest.Messages(reqs[1]), "then A") {
		t.Fatalf("the steered request: %v", modeltest.Messages(reqs[1]))
	}
	// A follow-up's prompt is its text after its predecessor's final
	// message and digest (seed 000); the session's context already holds
	// the conversation.
	if a, b := lastUser(reqs[2]), lastUser(reqs[3]); !strings.HasSuffix(a, "</harn-handoff>\n\nthen A") || !strings.Contains(a, `"steered answer"`) ||
		!strings.HasSuffix(b, "</harn-handoff>\n\nthen B") || !strings.Contains(b, `"answer A"`) {
		t.Fatalf("the follow-ups ran as %q then %q", a, b)
	}
	s := p.screen()
	for _, want := range []string{"↳ steer at step 2: mind the pelican", "● read " + f + "  ✓", "steered answer", "❯ then A", "answer A"} {
		if !strings.Contains(s, want) {
			t.Fatalf("the screen lacks %q:\n%s", want, s)
		}
	}
}

// Esc aborts the running task's foreground step: a running shell stops
// within the grace period (2 s here) and the turn ends cancelled.
func TestChatEscStopsARunningShellWithinItsGrace(t *testing.T) {
	e := askEnv(t)
	wd := t.TempDir()
	m := modeltest.New(t, modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell", Args: `{"command":"sleep 60"}`}), modeltest.Text("never"))
	p := startChat(t, e.root, "esc", wd, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), chatArgs(m)...)
	p.waitScreen("the TUI is up", "Enter steer")
	p.typeLine("sleep a while", "Enter")
	p.waitScreen("the shell runs", "● shell $ sleep 60  … running")
	start := time.Now()
	p.keys("Escape")
	p.waitScreen("the screen says the abort happened", " aborted t-")
	s := p.waitScreen("the shell stopped", "● shell $ sleep 60  ✗ aborted")
	if d := time.Since(start); d > 2*time.Second+3*time.Second {
		t.Fatalf("the shell stopped %v after Esc; the grace is 2s", d)
	}
	s = p.waitScreen("the turn ended cancelled", " cancelled")
	if !strings.Contains(s, "── ") {
		t.Fatalf("no end line:\n%s", s)
	}
}

// Kill the TUI and run harn again (alone, in the same directory): the
// same session comes back, and so does the same screen, from the node.
func TestChatKilledAndRunAgainPaintsTheSameScreen(t *testing.T) {
	e := askEnv(t)
	wd := t.TempDir()
	m := modeltest.New(t, modeltest.Text("line one\nline two \x1b[31mred\x1b[0m"))
	env := append(e.hookEnv(), "HARN_PROVIDER_KEY=k")
	p := startChat(t, e.root, "first", wd, env, chatArgs(m)...)
	p.waitScreen("the TUI is up", "Enter steer")
	p.typeLine("say two lines", "Enter")
	s := p.waitScreen("the turn ended", " succeeded ──")
	before := transcriptOf(s)
	// The escape sequence's ESC is dropped: its rest shows as plain text,
	// not as a colour.
	if !strings.Contains(before, "line two [31mred[0m") || strings.Contains(s, "\x1b") {
		t.Fatalf("the answer must reach the screen stripped of control characters:\n%s", s)
	}
	p.kill()

	again := startChat(t, e.root, "again", wd, env)
	again.waitScreen("harn alone lists the directory's sessions", "sessions of this directory")
	again.waitScreen("with the first prompt", "say two lines")
	again.keys("Enter")
	s = again.waitScreen("the picked session is on screen", "line two [31mred")
	eventually(t, stateTimeout, "the same screen", func() (bool, string) {
		s = again.screen()
		return transcriptOf(s) == before, "before:\n" + before + "\nnow:\n" + transcriptOf(s)
	})
}
