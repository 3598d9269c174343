package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Notifications end to end: real `harn node` processes post to a real
// HTTP server on 127.0.0.1.

// notifyTimeout bounds the arrival of a message: the debounce (3 s), plus
// the retries' backoff when the target was down.
const notifyTimeout = 40 * time.Second

// hookMsg is the part of a json-format message the tests read.
type hookMsg struct {
	Schema  string `json:"schema"`
	Kind    string `json:"kind"`
	Session struct {
		ID        string `json:"id"`
		Node      string `json:"node"`
		Activity  string `json:"activity"`
		TaskState string `json:"task_state"`
		Reason    string `json:"reason"`
		Link      string `json:"link"`
		Request   *struct {
			ID, Tool, Summary, Detail string
		} `json:"request"`
	} `json:"session"`
}

// hookServer is a webhook target that fails its first failFirst requests
// with 500 and keeps every message it accepted.
type hookServer struct {
	*httptest.Server
	mu        sync.Mutex
	failFirst int
	attempts  int
	got       []hookMsg
}

func newHookServer(t *testing.T, failFirst int) *hookServer {
	t.Helper()
	h := &hookServer{failFirst: failFirst}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		h.mu.Lock()
		defer h.mu.Unlock()
		h.attempts++
		if h.attempts <= h.failFirst {
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
			return
		}
		var m hookMsg
		if r.Method != http.MethodPost || json.Unmarshal(b, &m) != nil {
			http.Error(w, "bad message", http.StatusBadRequest)
			return
		}
		h.got = append(h.got, m)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) messages() []hookMsg {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookMsg(nil), h.got...)
}

func kindsOf(ms []hookMsg, sid string) []string {
	var out []string
	for _, m := range ms {
		if m.Session.ID == sid {
			out = append(out, m.Kind)
		}
	}
	return out
}

// waitKinds waits until the server holds, for sid, a message of kind last,
// and returns every kind it holds for sid.
func (h *hookServer) waitKinds(t *testing.T, sid, last string) []string {
	t.Helper()
	var kinds []string
	eventually(t, notifyTimeout, "a "+last+" message for "+sid, func() (bool, string) {
		kinds = kindsOf(h.messages(), sid)
		return len(kinds) > 0 && kinds[len(kinds)-1] == last, fmt.Sprintf("kinds %v", kinds)
	})
	return kinds
}

// notifyListJSON is `harn notify list --json`.
type notifyListJSON struct {
	Node     string `json:"node"`
	ID       string `json:"id"`
	Changed  bool   `json:"changed"`
	Webhooks []struct {
		ID        string   `json:"id"`
		URL       string   `json:"url"`
		Format    string   `json:"format"`
		On        []string `json:"on"`
		Queued    int      `json:"queued"`
		Sent      uint64   `json:"sent"`
		Failed    uint64   `json:"failed"`
		Dropped   uint64   `json:"dropped"`
		Retries   uint64   `json:"retries"`
		LastError string   `json:"last_error"`
	} `json:"webhooks"`
	Desktop struct {
		Enabled bool   `json:"enabled"`
		Shown   uint64 `json:"shown"`
	} `json:"desktop"`
}

func (e *env) notifyList() notifyListJSON {
	e.t.Helper()
	var l notifyListJSON
	mustJSON(e.t, e.ok("notify", "list", "--json"), &l)
	return l
}

// waitLeader waits until the node's registry has a leader: a node
// answers on its socket before it has joined its mesh.
func (e *env) waitLeader() {
	e.t.Helper()
	eventually(e.t, meshTimeout, "a registry leader", func() (bool, string) {
		r := e.harn("", "mesh", "raft", "--json")
		var st raftJSON
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
			return false, r.String()
		}
		return st.Leader != "", r.stdout
	})
}

// addWebhook adds url for the mesh (through the leader) and returns its id.
func (e *env) addWebhook(url string, flags ...string) string {
	e.t.Helper()
	var l notifyListJSON
	mustJSON(e.t, e.ok(append([]string{"notify", "add", "webhook", url, "--json"}, flags...)...), &l)
	if l.ID == "" || !l.Changed {
		e.t.Fatalf("notify add: %+v", l)
	}
	return l.ID
}

// TestWebhookGetsOneMessagePerTransition: hooks drive a session to
// needs_input and the webhook gets one POST; a flap within the debounce
// sends nothing more. The blocked that follows is the barrier: the
// webhook's queue is in order, so any extra needs_input would be before it.
func TestWebhookGetsOneMessagePerTransition(t *testing.T) {
	e := newEnv(t)
	e.startNode("--name", "solo", "--allow-private")
	e.waitLeader()
	srv := newHookServer(t, 0)
	id := e.addWebhook(srv.URL+"/harn", "--on", "needs_input,blocked")
	if l := e.notifyList(); len(l.Webhooks) != 1 || l.Webhooks[0].ID != id || l.Node != "solo" {
		t.Fatalf("notify list: %+v", l)
	}
	sid, cwd := "notify-once-5d1e", t.TempDir()
	e.hook("claude-code", claudeStart(sid, cwd))
	e.hook("claude-code", claudePrompt(sid, cwd))
	e.hook("claude-code", claudePermission(sid, cwd))
	// The flap: working again and back to needs_input, within the window.
	e.hook("claude-code", claudePrompt(sid, cwd))
	e.hook("claude-code", claudePermission(sid, cwd))
	if st := e.status(sid); st.Activity != "needs_input" {
		t.Fatalf("activity %q, want needs_input", st.Activity)
	}
	if kinds := srv.waitKinds(t, sid, "needs_input"); len(kinds) != 1 {
		t.Fatalf("kinds %v, want one needs_input", kinds)
	}
	e.ok("agents", "lifecycle", "blocked", "--reason", "needs the deploy key", "--session", sid)
	kinds := srv.waitKinds(t, sid, "blocked")
	if strings.Join(kinds, ",") != "needs_input,blocked" {
		t.Fatalf("kinds %v, want needs_input then blocked, once each", kinds)
	}
	for _, m := range srv.messages() {
		if m.Schema != "harn.notify/v1" || m.Session.Node != "solo" {
			t.Fatalf("message %+v", m)
		}
	}
	var l notifyListJSON
	eventually(t, stateTimeout, "notify list counts the two sent", func() (bool, string) {
		l = e.notifyList()
		w := l.Webhooks[0]
		return w.Sent == 2 && w.Queued == 0 && w.Failed == 0 && w.Dropped == 0, fmt.Sprintf("%+v", l)
	})
	// Removing it is one command; the list is empty after.
	e.ok("notify", "remove", id)
	if l := e.notifyList(); len(l.Webhooks) != 0 {
		t.Fatalf("after remove: %+v", l)
	}
	if r := e.harn("", "notify", "remove", id); r.code != 3 {
		t.Fatalf("removing it again: %v; want exit 3", r)
	}
	if r := e.harn("", "notify", "add", "webhook", "ftp://example.com/x"); r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("a bad URL: %v; want exit 2 and one line", r)
	}
}

// TestWebhookDownThenUpLosesNothing: the target answers 500 to the first
// attempts; the messages wait in the queue and arrive, in order, once it
// answers again.
func TestWebhookDownThenUpLosesNothing(t *testing.T) {
	e := newEnv(t)
	e.startNode("--allow-private")
	e.waitLeader()
	srv := newHookServer(t, 2)
	e.addWebhook(srv.URL+"/harn", "--on", "needs_input")
	cwd := t.TempDir()
	for _, sid := range []string{"notify-down-a", "notify-down-b"} {
		e.hook("claude-code", claudeStart(sid, cwd))
		e.hook("claude-code", claudePrompt(sid, cwd))
		e.hook("claude-code", claudePermission(sid, cwd))
	}
	srv.waitKinds(t, "notify-down-a", "needs_input")
	srv.waitKinds(t, "notify-down-b", "needs_input")
	var l notifyListJSON
	eventually(t, stateTimeout, "both sent after retries", func() (bool, string) {
		l = e.notifyList()
		w := l.Webhooks[0]
		return w.Sent == 2 && w.Retries >= 2 && w.Failed == 0 && w.Dropped == 0, fmt.Sprintf("%+v", l)
	})
	if n := len(srv.messages()); n != 2 {
		t.Fatalf("%d messages accepted, want 2", n)
	}
}

// TestNotifyConfiguredOncePerMeshToldByTheOwner: a webhook added on one
// node of a two-node mesh is listed by both (it lives in the registry);
// a session of node a is told by a alone; removing it anywhere removes it
// everywhere.
func TestNotifyConfiguredOncePerMeshToldByTheOwner(t *testing.T) {
	nodes := startServers(t, 2, "--allow-private")
	a, b := nodes[0], nodes[1]
	srv := newHookServer(t, 0)
	id := b.addWebhook(srv.URL+"/harn", "--on", "needs_input,blocked", "--format", "json")
	eventually(t, meshTimeout, a.name+" lists the webhook added on "+b.name, func() (bool, string) {
		l := a.notifyList()
		return len(l.Webhooks) == 1 && l.Webhooks[0].ID == id, fmt.Sprintf("%+v", l)
	})
	sid, cwd := "notify-mesh-3a7c", t.TempDir()
	startClaudeSession(a, sid, cwd)
	a.hook("claude-code", claudePermission(sid, cwd))
	srv.waitKinds(t, sid, "needs_input")
	a.ok("agents", "lifecycle", "blocked", "--reason", "waiting for review", "--session", sid)
	if kinds := srv.waitKinds(t, sid, "blocked"); strings.Join(kinds, ",") != "needs_input,blocked" {
		t.Fatalf("kinds %v, want needs_input then blocked, once each", kinds)
	}
	for _, m := range srv.messages() {
		if m.Session.Node != a.name {
			t.Fatalf("message about a session of %s: %+v", m.Session.Node, m)
		}
	}
	eventually(t, stateTimeout, "the owner counts two sent", func() (bool, string) {
		l := a.notifyList()
		return l.Node == a.name && l.Webhooks[0].Sent == 2, fmt.Sprintf("%+v", l)
	})
	if l := b.notifyList(); l.Node != b.name || l.Webhooks[0].Sent != 0 || l.Webhooks[0].Queued != 0 {
		t.Fatalf("the node that does not own the session sent: %+v", l)
	}
	a.ok("notify", "remove", id)
	eventually(t, meshTimeout, b.name+" no longer lists the webhook", func() (bool, string) {
		l := b.notifyList()
		return len(l.Webhooks) == 0, fmt.Sprintf("%+v", l)
	})
}

// TestAgentsWaitReturnsWhenTheStateArrives: a wait started before the
// session needs input returns, with the session, once it does.
func TestAgentsWaitReturnsWhenTheStateArrives(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	sid, cwd := "wait-arrives-9b2f", t.TempDir()
	e.hook("claude-code", claudeStart(sid, cwd))
	e.hook("claude-code", claudePrompt(sid, cwd))

	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, harnBin, "agents", "wait", sid, "--for", "needs_input", "--timeout", "45s")
	cmd.Env = e.hookEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	e.hook("claude-code", claudePermission(sid, cwd))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("agents wait: %v; stderr %s", err, errb.String())
		}
	case <-ctx.Done():
		t.Fatalf("agents wait did not return; stderr %s", errb.String())
	}
	line := strings.TrimSpace(out.String())
	if strings.Count(line, "\n") != 0 || !strings.HasPrefix(line, sid+" ") || !strings.Contains(line, "needs_input") {
		t.Fatalf("agents wait printed %q; want one line naming %s and needs_input", line, sid)
	}

	// --any --json: the state holds now, so it returns at once with the row.
	var row sessionJSON
	mustJSON(t, e.ok("agents", "wait", "--any", "--for", "needs_input", "--timeout", "20s", "--json"), &row)
	if row.SessionID != sid || row.Activity != "needs_input" {
		t.Fatalf("wait --any --json: %+v", row)
	}
}

// TestAgentsWaitTimesOutWithItsOwnExitCode: a state that never comes ends
// the wait at --timeout with exit 14 and one line.
func TestAgentsWaitTimesOutWithItsOwnExitCode(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	sid, cwd := "wait-timeout-41c0", t.TempDir()
	e.hook("claude-code", claudeStart(sid, cwd))
	r := e.harn("", "agents", "wait", sid, "--for", "done", "--timeout", "600ms")
	if r.code != 14 || !strings.Contains(r.stderr, "timed out") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stdout != "" {
		t.Fatalf("%v; want exit 14 and one line", r)
	}
	if r := e.harn("", "agents", "wait", "no-such-session", "--for", "done", "--timeout", "1s"); r.code != 3 {
		t.Fatalf("unknown session: %v; want exit 3", r)
	}
	if r := e.harn("", "agents", "wait", sid, "--for", "working"); r.code != 2 {
		t.Fatalf("bad --for: %v; want exit 2", r)
	}
}

// TestDesktopNotificationForNeedsInput: with --desktop-notify on, the node
// runs notify-send (here a script on PATH that records its arguments) when
// one of its sessions needs input.
func TestDesktopNotificationForNeedsInput(t *testing.T) {
	e := newEnv(t)
	bin := filepath.Join(e.root, "bin")
	rec := filepath.Join(e.root, "notify-send.out")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> " + rec + "\n"
	if err := os.WriteFile(filepath.Join(bin, "notify-send"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.base = append(e.base, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	e.startNode("--desktop-notify", "on")
	sid, cwd := "desktop-7e21", t.TempDir()
	e.hook("claude-code", claudeStart(sid, cwd))
	e.hook("claude-code", claudePrompt(sid, cwd))
	e.hook("claude-code", claudePermission(sid, cwd))
	var got string
	eventually(t, notifyTimeout, "notify-send ran", func() (bool, string) {
		b, err := os.ReadFile(rec)
		if errors.Is(err, os.ErrNotExist) {
			return false, "not run yet"
		}
		got = string(b)
		return strings.Contains(got, "--app-name=harn"), got
	})
	if !strings.Contains(got, "needs") {
		t.Fatalf("notify-send arguments %q: want a needs-input title", got)
	}
	if l := e.notifyList(); !l.Desktop.Enabled {
		t.Fatalf("notify list: %+v", l)
	}
}
