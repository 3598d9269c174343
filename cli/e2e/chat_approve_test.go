package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// More of the TUI in a real terminal: approvals answered in place, the
// queue of follow-ups queued from anywhere, and the screen after the node
// restarts.

var chatSessionRE = regexp.MustCompile(`session (h-[0-9A-Za-z]+) on `)

// sessionOf is the session the TUI's header names.
func (p *chatPane) sessionOf() string {
	p.t.Helper()
	s := p.waitScreen("the header names the session", " on ")
	m := chatSessionRE.FindStringSubmatch(s)
	if m == nil {
		p.t.Fatalf("no session in the header:\n%s", s)
	}
	return m[1]
}

// chatConfirmCase: the read tool needs a confirmation; the TUI shows it
// with y/n, the key answers it, and the screen says what happened.
func chatConfirmCase(t *testing.T, key string) (*chatPane, *modeltest.Server, string) {
	e := askEnv(t)
	wd := t.TempDir()
	f := filepath.Join(wd, "notes.txt")
	os.WriteFile(f, []byte("the word is pelican"), 0o600)
	m := modeltest.New(t, modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "read", Args: `{"path":"` + f + `"}`}),
		modeltest.Text("after the answer"))
	g := grantsFile(t, "execute read confirm\n")
	p := startChat(t, e.root, "confirm-"+key, wd, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"),
		"chat", "--provider-url", m.URL(), "--model", "test-model", "--grants", g)
	p.waitScreen("the TUI is up", "Enter steer")
	p.typeLine("read the notes", "Enter")
	p.waitScreen("the call waits for an approval", "● read "+f+"  ? waits for approval")
	s := p.waitScreen("the approval box asks y/n", "approve read?")
	if !strings.Contains(s, "y approve  n deny") || !strings.Contains(s, "agent harn") {
		t.Fatalf("the approval box:\n%s", s)
	}
	if n := len(m.Requests()); n != 1 {
		t.Fatalf("%d model requests while the call waits, want 1", n)
	}
	p.keys(key)
	return p, m, f
}

// y approves the pending call in place: the tool runs, the screen says so
// and the model gets the file.
func TestChatYApprovesAPendingCallAndTheToolRuns(t *testing.T) {
	p, m, _ := chatConfirmCase(t, "y")
	p.waitScreen("the screen says it approved", " approved read ")
	s := p.waitScreen("the tool ran", "  ✓")
	s = p.waitScreen("the turn ended", " succeeded ──")
	if !strings.Contains(s, "after the answer") || strings.Contains(s, "approve read?") || !strings.Contains(s, "the word is pelican") {
		t.Fatalf("after y:\n%s", s)
	}
	reqs := requestsAtLeast(t, m, 2)
	if !modeltest.Contains(modeltest.Messages(reqs[1]), "pelican") {
		t.Fatalf("the approved read's result did not reach the model: %v", modeltest.Messages(reqs[1]))
	}
}

// n refuses it: the tool does not run, the screen says so, and the model
// is told of the refusal, not the file.
func TestChatNRefusesAPendingCall(t *testing.T) {
	p, m, _ := chatConfirmCase(t, "n")
	p.waitScreen("the screen says it denied", " denied read ")
	s := p.waitScreen("the turn ended", "after the answer")
	if strings.Contains(s, "  ✓") || strings.Contains(s, "? waits") || strings.Contains(s, "approve read?") || !strings.Contains(s, "✗ denied") {
		t.Fatalf("after n the call must be refused, not run nor waiting:\n%s", s)
	}
	reqs := requestsAtLeast(t, m, 2)
	if modeltest.Contains(modeltest.Messages(reqs[1]), "pelican") {
		t.Fatalf("the denied read ran: %v", modeltest.Messages(reqs[1]))
	}
	if !strings.Contains(strings.ToLower(strings.Join(modeltest.Messages(reqs[1]), "\n")), "den") {
		t.Fatalf("the model was not told of the refusal: %v", modeltest.Messages(reqs[1]))
	}
}

// A follow-up queued from another terminal (harn task follow-up) shows on
// the TUI's queue line with its text, beside the TUI's own.
func TestChatQueueShowsFollowUpsQueuedElsewhere(t *testing.T) {
	e := askEnv(t)
	wd := t.TempDir()
	hold := make(chan struct{})
	first := modeltest.Text("first answer")
	first.Hold = hold
	m := modeltest.New(t, first, modeltest.Text("answer elsewhere"), modeltest.Text("answer here"))
	p := startChat(t, e.root, "queue", wd, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), chatArgs(m)...)
	p.waitScreen("the TUI is up", "Enter steer")
	p.typeLine("hold on", "Enter")
	id := p.sessionOf()
	requestsAtLeast(t, m, 1)
	r := e.task("follow-up", "--session", id, "queued from elsewhere")
	p.waitScreen("the queue shows the other terminal's follow-up", r.Task.ID[:8])
	p.waitScreen("with its text", " queued from elsewhere")
	p.typeLine("queued here", "Tab")
	s := p.waitScreen("the queue shows both", "queue: 2 waiting")
	if !strings.Contains(s, " queued from elsewhere") || !strings.Contains(s, "queued here") {
		t.Fatalf("the queue line must show every follow-up:\n%s", s)
	}
	close(hold)
	p.waitScreen("both ran", "answer here")
	eventually(t, stateTimeout, "the queue drained", func() (bool, string) {
		s := p.screen()
		return !strings.Contains(s, "queue:"), s
	})
}

// The node restarts: `harn chat --session X` paints the session's screen
// again from the node's stored history.
func TestChatScreenComesBackAfterANodeRestart(t *testing.T) {
	e := newEnv(t)
	environ := append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s")
	args := []string{"node", "--data-dir", e.dataDir, "--socket", e.socket}
	n := e.spawn(environ, args...)
	e.waitReady(n)
	wd := t.TempDir()
	m := modeltest.New(t, modeltest.Text("line one\nline two"))
	env := append(e.hookEnv(), "HARN_PROVIDER_KEY=k")
	p := startChat(t, e.root, "before", wd, env, chatArgs(m)...)
	p.waitScreen("the TUI is up", "Enter steer")
	p.typeLine("say two lines", "Enter")
	s := p.waitScreen("the turn ended", " succeeded ──")
	id := p.sessionOf()
	before := transcriptOf(s)
	p.kill()
	e.stopNode(n)

	n2 := e.spawn(environ, args...)
	e.waitReady(n2)
	again := startChat(t, e.root, "after", wd, env, "chat", "--session", id)
	again.waitScreen("the history came back", "line two")
	eventually(t, stateTimeout, "the same screen", func() (bool, string) {
		s = again.screen()
		return transcriptOf(s) == before, "before:\n" + before + "\nnow:\n" + transcriptOf(s)
	})
	if !strings.Contains(s, "session "+id+" on ") {
		t.Fatalf("the header after the restart:\n%s", s)
	}
}
