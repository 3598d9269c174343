package board

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/api"
)

// fakeHoster is a board Actions that hosts terminals.
type fakeHoster struct {
	*fakeActions
	screen []string
	runs   []RunRequest
}

func (h *fakeHoster) Screen(_ context.Context, session string) ([]string, error) {
	return h.screen, nil
}
func (h *fakeHoster) Act(_ context.Context, op string, r ActionRequest) (string, error) {
	return h.do("hosted_"+op, r)
}
func (h *fakeHoster) Run(_ context.Context, r RunRequest) (string, error) {
	h.runs = append(h.runs, r)
	return "hs-new", nil
}
func (h *fakeHoster) Targets(context.Context) RunTargets {
	return RunTargets{Nodes: []string{"alpha", "beta"}, Agents: []string{"claude-code", "fake"}}
}

func hostedServer(t *testing.T, screen ...string) (*Server, *fakeHoster) {
	t.Helper()
	h := &fakeHoster{fakeActions: &fakeActions{}, screen: screen}
	s, src, _ := newTestServer(t, func(c *Config) { c.Actions = h })
	src.rows = append(src.rows, Row{SessionRow: &api.SessionRow{SessionId: "hs-1", Name: "hugo", Agent: "claude-code", Node: "beta", Activity: "needs_input",
		TaskState: "active", Reachable: true, Hosted: &api.HostedView{Worktree: "/src/app/.harn/worktrees/fix", Branch: "fix",
			Peek: []string{"<b>Allow Bash: rm -rf build?</b> [y/n]", "\x1b]0;pwned\x07evil"}}}})
	return s, h
}

func postTo(t *testing.T, s *Server, path, body string) int {
	t.Helper()
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://" + localHost, "Accept": "application/json"}
	return do(t, s.Handler(), http.MethodPost, path, strings.NewReader(body), h).Code
}

// TestTheHostedPageShowsTheScreenEscaped: a hosted session's page shows
// its terminal's screen, control characters stripped and HTML escaped,
// and polls it live.
func TestTheHostedPageShowsTheScreenEscaped(t *testing.T) {
	s, _ := hostedServer(t, "fake agent  24x80", "<script>alert(1)</script>", "\x1b[31mred\x1b[0m line")
	w := get(t, s.Handler(), "/h/hs-1")
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, "fake agent  24x80") || !strings.Contains(body, `data-poll="/h/hs-1/screen"`) {
		t.Fatalf("%d %s", w.Code, body)
	}
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("the screen is not escaped: %s", body)
	}
	if strings.ContainsRune(body, 0x1b) || !strings.Contains(body, "[31mred[0m line") {
		t.Fatalf("a control character reached the page: %q", body)
	}
	frag := get(t, s.Handler(), "/h/hs-1/screen").Body.String()
	if strings.Contains(frag, "<html") || !strings.Contains(frag, "&lt;script&gt;") {
		t.Fatalf("the screen fragment: %s", frag)
	}
}

// TestTheBoardShowsAHostedSessionsQuestion: the card of a hosted session
// that needs input shows the last lines of its screen, escaped, and links
// its terminal.
func TestTheBoardShowsAHostedSessionsQuestion(t *testing.T) {
	s, _ := hostedServer(t)
	body := get(t, s.Handler(), "/").Body.String()
	if !strings.Contains(body, "&lt;b&gt;Allow Bash: rm -rf build?&lt;/b&gt; [y/n]") || !strings.Contains(body, `href="/h/hs-1"`) {
		t.Fatalf("the card does not show the peek: %s", body)
	}
	if strings.ContainsRune(body, 0x1b) || strings.ContainsRune(body, 0x07) {
		t.Fatal("a control character of the peek reached the board")
	}
}

// TestHostedActionsNeedTheCSRFToken: a steer, follow-up, interrupt or stop
// from the hosted page passes the CSRF check first; without the token
// nothing is called.
func TestHostedActionsNeedTheCSRFToken(t *testing.T) {
	s, h := hostedServer(t)
	if code := postTo(t, s, "/hosted", "kind=steer&session=hs-1&text=go"); code != http.StatusForbidden {
		t.Fatalf("without the CSRF token: %d", code)
	}
	if code := postTo(t, s, "/run", "agent=fake&node=beta&dir=/src"); code != http.StatusForbidden {
		t.Fatalf("a start without the CSRF token: %d", code)
	}
	if len(h.log()) != 0 || len(h.runs) != 0 {
		t.Fatalf("a refused action was called: %v %v", h.log(), h.runs)
	}
	for _, c := range []struct{ form, call string }{
		{form(s, "kind", "steer", "session", "hs-1", "text", "use pebble"), "hosted_steer hs-1   use pebble"},
		{form(s, "kind", "follow_up", "session", "hs-1", "text", "then docs"), "hosted_follow_up hs-1   then docs"},
		{form(s, "kind", "interrupt", "session", "hs-1"), "hosted_interrupt hs-1   "},
		{form(s, "kind", "stop", "session", "hs-1"), "hosted_stop hs-1   "},
	} {
		if code := postTo(t, s, "/hosted", c.form); code != 200 {
			t.Fatalf("%s: %d", c.call, code)
		}
		if got := h.log(); got[len(got)-1] != c.call {
			t.Fatalf("called %q, want %q", got[len(got)-1], c.call)
		}
	}
	if code := postTo(t, s, "/hosted", form(s, "kind", "steer", "session", "hs-1")); code != http.StatusBadRequest {
		t.Fatalf("a steer without text: %d", code)
	}
}

// TestTheBoardStartsAnAgentOnANode: the start form lists the nodes and
// agents, and its POST starts one there and goes to its terminal.
func TestTheBoardStartsAnAgentOnANode(t *testing.T) {
	s, h := hostedServer(t)
	page := get(t, s.Handler(), "/run").Body.String()
	if !strings.Contains(page, `<option value="beta">`) || !strings.Contains(page, `<option value="fake">`) {
		t.Fatalf("the start form: %s", page)
	}
	req := form(s, "agent", "fake", "node", "beta", "dir", "/src/app", "worktree", "fix/x", "prompt", "fix it")
	w := do(t, s.Handler(), http.MethodPost, "/run", strings.NewReader(req),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://" + localHost})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/h/hs-new" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	if len(h.runs) != 1 || h.runs[0] != (RunRequest{Agent: "fake", Node: "beta", Dir: "/src/app", Worktree: "fix/x", Prompt: "fix it", By: "board"}) {
		t.Fatalf("runs %+v", h.runs)
	}
}
