package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport"
)

// TestBoardShowsAnotherMachinesSessionsLive: the board of one node of a
// two-server mesh shows a session that runs on the other node; a
// lifecycle change made there repaints the card here within 2 s, without
// a reload (gossip and registry changes reach the stream); the detail of
// the remote session loads, and still loads after it ended. /metrics
// reports the mesh's members and the raft state.
func TestBoardShowsAnotherMachinesSessionsLive(t *testing.T) {
	testsupport.Chromium(t)
	nodes := startServers(t, 2, "--http-port", "127.0.0.1:0")
	owner, viewer := nodes[0], nodes[1]
	cwd := t.TempDir()
	const sid = "web-mesh-5d2c-owner"
	startClaudeSession(owner, sid, cwd)
	eventually(t, stateTimeout, viewer.name+" sees the session", func() (bool, string) {
		s, ok, why := viewer.session(false, sid)
		if !ok {
			return false, why
		}
		return s.Node == owner.name && s.Activity == "working", s.String()
	})
	url := strings.TrimSpace(viewer.ok("web", "url"))
	base, token, ok := strings.Cut(url, "?token=")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":0/") {
		t.Fatalf("harn web url printed %q; want the bound loopback address with its token", url)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	if st := navigate(t, b, url); st != 200 {
		t.Fatalf("board: status %d", st)
	}
	card := `document.querySelector('article[data-id="` + sid + `"]')`
	waitJS(t, b, 10*time.Second, card+` !== null`)
	if m := jsEval[string](t, b, card+`.closest('section').querySelector('.mname').textContent`); m != owner.name {
		t.Errorf("the card is grouped under %q, want the owner %q", m, owner.name)
	}
	waitJS(t, b, 10*time.Second, `document.getElementById('live').dataset.state === 'live'`)
	jsEval[bool](t, b, `window.__sameDocument = true`)
	start := time.Now()
	owner.ok("agents", "lifecycle", "blocked", "--session", sid, "--reason", "waiting on the other machine")
	waitJS(t, b, 2*time.Second, card+`.classList.contains('lc-blocked')`)
	t.Logf("the remote card repainted %v after the lifecycle command was started", time.Since(start))
	if !jsEval[bool](t, b, `window.__sameDocument === true`) {
		t.Fatal("the page reloaded")
	}
	screenshot(t, b, "mesh-board-remote-blocked.png")

	if st := navigate(t, b, base+"s/"+sid); st != 200 {
		t.Fatalf("detail of the remote session: status %d", st)
	}
	owner.hook("claude-code", `{`+claudeCommon(sid, cwd)+`,"hook_event_name":"SessionEnd","reason":"prompt_input_exit"}`)
	eventually(t, stateTimeout, viewer.name+" sees the session end", func() (bool, string) {
		_, live, _ := viewer.session(false, sid)
		return !live, "still live on " + viewer.name
	})
	if st := navigate(t, b, base+"s/"+sid); st != 200 {
		t.Fatalf("detail of the ended remote session: status %d", st)
	}
	if h1 := jsEval[string](t, b, `document.querySelector('h1').innerText`); !strings.Contains(h1, "ended") {
		t.Fatalf("detail h1 %q does not say ended", h1)
	}

	req, _ := http.NewRequest("GET", base+"metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token) // as Prometheus's authorization setting sends it
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`harn_mesh_members{state="alive"} 2`, `harn_raft_commit_index`, `harn_raft_state{state="Leader"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
