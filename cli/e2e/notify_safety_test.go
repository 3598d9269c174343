package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Webhooks may not reach the inside: a webhook is set once for the mesh
// and every node posts to it, so without the operator's --allow-private a
// node neither accepts nor dials a loopback or private target, and it
// never follows a redirect (which would carry the message, and the secret
// path in a Referer, somewhere nobody configured).

// recorder is an HTTP server that keeps what each request carried.
type recorder struct {
	*httptest.Server
	mu       sync.Mutex
	hits     int
	referers []string
}

func newRecorder(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.hits++
		rec.referers = append(rec.referers, r.Header.Get("Referer"))
		rec.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) seen() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits, append([]string(nil), r.referers...)
}

// TestWebhookToLoopbackIsRefusedWithoutAllowPrivate: `notify add` of a
// 127.0.0.1 target on a default node is refused with one line naming the
// flag, and nothing is stored.
func TestWebhookToLoopbackIsRefusedWithoutAllowPrivate(t *testing.T) {
	e := newEnv(t)
	e.startNode("--name", "solo")
	e.waitLeader()
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, u := range []string{srv.URL + "/secret", "http://localhost:9/x", "http://[::1]:9/x", "http://10.0.0.1/x", "http://169.254.169.254/x"} {
		r := e.harn("", "notify", "add", "webhook", u)
		msg := strings.TrimSpace(r.stderr)
		if r.code != 4 || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "--allow-private") {
			t.Fatalf("notify add %s: %v; want exit 4 and one line naming --allow-private", u, r)
		}
		if strings.Contains(msg, "/secret") {
			t.Fatalf("the refusal shows the secret path: %q", msg)
		}
	}
	if l := e.notifyList(); len(l.Webhooks) != 0 {
		t.Fatalf("a refused webhook was stored: %+v", l)
	}
	if n, _ := srv.seen(); n != 0 {
		t.Fatalf("the target got %d requests", n)
	}
}

// TestWebhookRedirectIsNotFollowedAndSendsNoReferer: with --allow-private,
// a target that answers 307 to another local server is a failed delivery,
// given up at once; the second server sees nothing, the first no Referer.
func TestWebhookRedirectIsNotFollowedAndSendsNoReferer(t *testing.T) {
	e := newEnv(t)
	e.startNode("--name", "solo", "--allow-private")
	e.waitLeader()
	inner := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	outer := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/collect", http.StatusTemporaryRedirect)
	})
	e.addWebhook(outer.URL+"/services/T0/secret-token", "--on", "needs_input")
	sid, cwd := "notify-redirect-77a1", t.TempDir()
	e.hook("claude-code", claudeStart(sid, cwd))
	e.hook("claude-code", claudePrompt(sid, cwd))
	e.hook("claude-code", claudePermission(sid, cwd))
	var l notifyListJSON
	eventually(t, notifyTimeout, "the redirected message counted failed", func() (bool, string) {
		l = e.notifyList()
		w := l.Webhooks[0]
		return w.Failed == 1 && w.Queued == 0, fmt.Sprintf("%+v", l)
	})
	w := l.Webhooks[0]
	if w.Sent != 0 || w.Retries != 0 || !strings.Contains(w.LastError, strconv.Itoa(http.StatusTemporaryRedirect)) {
		t.Fatalf("webhook %+v; want failed once, no retries, the 307 in its last error", w)
	}
	if strings.Contains(w.LastError, "secret-token") {
		t.Fatalf("the last error shows the secret path: %q", w.LastError)
	}
	// The delivery is over: a followed redirect would have reached inner
	// before the answer was counted.
	if n, _ := inner.seen(); n != 0 {
		t.Fatalf("the redirect was followed: the second server got %d requests", n)
	}
	n, refs := outer.seen()
	if n != 1 {
		t.Fatalf("the target got %d requests, want 1", n)
	}
	for _, r := range refs {
		if r != "" {
			t.Fatalf("the target got a Referer %q", r)
		}
	}
}

// TestWebhookToLoopbackIsRefusedAtDialByANodeWithoutAllowPrivate: a
// webhook to 127.0.0.1 added through a node that allows it is refused by
// the owner of the session, which does not: its dialer checks the address
// it would connect to, so nothing reaches the target.
func TestWebhookToLoopbackIsRefusedAtDialByANodeWithoutAllowPrivate(t *testing.T) {
	a, b := newMeshNode(t, "srv-a", "--insecure-mesh"), newMeshNode(t, "srv-b", "--insecure-mesh", "--allow-private")
	nodes := []*meshNode{a, b}
	for i, m := range nodes {
		m.flags = append(m.flags, "--server", "--bootstrap-expect", "2", "--join", nodes[1-i].gossipAddr)
	}
	for _, m := range nodes {
		m.spawn()
	}
	for _, m := range nodes {
		m.ready()
	}
	waitFormed(t, nodes, nodes)
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	id := b.addWebhook(srv.URL+"/harn", "--on", "needs_input")
	eventually(t, meshTimeout, a.name+" lists the webhook", func() (bool, string) {
		l := a.notifyList()
		return len(l.Webhooks) == 1 && l.Webhooks[0].ID == id, fmt.Sprintf("%+v", l)
	})
	sid, cwd := "notify-dial-5c3e", t.TempDir()
	startClaudeSession(a, sid, cwd)
	a.hook("claude-code", claudePermission(sid, cwd))
	var l notifyListJSON
	eventually(t, notifyTimeout, a.name+" gives the message up", func() (bool, string) {
		l = a.notifyList()
		w := l.Webhooks[0]
		return w.Failed == 1 && w.Queued == 0, fmt.Sprintf("%+v", l)
	})
	if w := l.Webhooks[0]; w.Sent != 0 || w.Retries != 0 || !strings.Contains(w.LastError, "--allow-private") {
		t.Fatalf("webhook %+v; want failed once, no retries, a last error naming --allow-private", w)
	}
	if n, _ := srv.seen(); n != 0 {
		t.Fatalf("the private target got %d requests", n)
	}
}
