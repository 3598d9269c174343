package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport"
	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// Every approval shows what it approves, on every surface, for both
// kinds: an agent's permission request (a Claude Code hook that waits
// with --remote-approve) and a harn task's confirmation (harn's own shell
// call under `execute shell confirm`, against the scripted model).

// pushCmd is the part of a command that matters.
const pushCmd = "git push --force-with-lease origin main"

// hostileBash is a Claude Code PermissionRequest for a Bash command with
// markup and an escape sequence before the push.
func hostileBash(sid, cwd string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":` +
		`"echo '<b>hi</b><script>window.__pwned=1</script>' \u001b[31m && ` + pushCmd + `","description":"push"}}`
}

// approvalRow is one request of `harn agents pending --json`.
type approvalRow struct {
	ID, Kind, Session, Agent, Node, Tool, Task, Call string
	Command, Cwd, Path, Diff                         string
	WaitingSince                                     string `json:"waiting_since"`
	Waited                                           string `json:"waited"`
}

// approvalSetup is a node with a hook's permission request and a harn
// session's shell call that both wait: the hook's answer comes on
// hookDone, the harn session's events on ask.
type approvalSetup struct {
	e                 *env
	sid, cwd, harnDir string
	hookDone          chan result
	ask               <-chan map[string]any
	marker            string
}

func setupApprovals(t *testing.T, e *env) *approvalSetup {
	t.Helper()
	s := &approvalSetup{e: e, sid: "cc-push-000001", cwd: t.TempDir(), harnDir: t.TempDir(), hookDone: make(chan result, 1)}
	e.hook("claude-code", claudeStart(s.sid, s.cwd))
	e.hook("claude-code", claudePrompt(s.sid, s.cwd))
	go func() {
		s.hookDone <- run(t, e.hookEnv(), hostileBash(s.sid, s.cwd), "hook", "claude-code", "--remote-approve", "--approve-wait", "90s")
	}()
	s.marker = filepath.Join(s.harnDir, "pushed")
	m := modeltest.New(t, modeltest.Calls(true, modeltest.Call{ID: "call-push", Name: "shell",
		Args: `{"command":"` + pushCmd + ` || touch ` + s.marker + `"}`}), modeltest.Text("pushed"))
	s.ask, _ = askJSONIn(t, e, s.harnDir, []string{"ask", "--provider-url", m.URL(), "--model", "test-model",
		"--grants", grantsFile(t, "execute shell confirm\n"), "push the branch"})
	waitFor(t, s.ask, "input.requested")
	return s
}

// pending reads both requests from `harn agents pending --json`.
func (s *approvalSetup) pending(t *testing.T) (perm, conf approvalRow) {
	t.Helper()
	eventually(t, stateTimeout, "both calls are pending", func() (bool, string) {
		var rows []approvalRow
		out := s.e.ok("agents", "pending", "--json")
		mustJSON(t, out, &rows)
		perm, conf = approvalRow{}, approvalRow{}
		for _, r := range rows {
			switch r.Kind {
			case "permission":
				perm = r
			case "confirmation":
				conf = r
			}
		}
		return perm.ID != "" && conf.ID != "", out
	})
	return perm, conf
}

// TestPendingShowsWhatEachApprovalApproves: `harn agents pending` lists
// the hook's request and the harn session's confirmation with the whole
// command, its cwd, the session, the agent and the wait (--json with its
// stable names); escape sequences are stripped; the printed answers run
// as printed and reach the waiting hook and the waiting call.
func TestPendingShowsWhatEachApprovalApproves(t *testing.T) {
	e := askEnv(t)
	s := setupApprovals(t, e)
	perm, conf := s.pending(t)
	wantCmd := "echo '<b>hi</b><script>window.__pwned=1</script>' [31m && " + pushCmd
	if perm.Command != wantCmd || perm.Cwd != s.cwd || perm.Session != s.sid || perm.Agent != "claude-code" || perm.Tool != "Bash" ||
		perm.WaitingSince == "" || perm.Waited == "" {
		t.Fatalf("the permission request: %+v", perm)
	}
	if conf.Command != pushCmd+" || touch "+s.marker || conf.Cwd != s.harnDir || conf.Agent != "harn" || conf.Tool != "shell" ||
		conf.Task == "" || conf.Call != "call-push" || conf.ID != "call-push" || conf.WaitingSince == "" {
		t.Fatalf("the confirmation: %+v", conf)
	}
	human := e.ok("agents", "pending")
	if strings.Contains(human, "\x1b") {
		t.Fatalf("an escape sequence reached the terminal: %q", human)
	}
	for _, want := range []string{"  command:  " + wantCmd + "\n", "  cwd:      " + s.cwd + "\n",
		"  command:  " + pushCmd + " || touch " + s.marker + "\n", "  cwd:      " + s.harnDir + "\n",
		"  task:     " + conf.Task + " (the call waits for its confirmation)\n", " (harn), waiting ", " (claude-code), waiting "} {
		if !strings.Contains(human, want) {
			t.Fatalf("pending lacks %q:\n%s", want, human)
		}
	}
	// The answers, run exactly as printed.
	printed := func(label, id string) []string {
		for _, l := range strings.Split(human, "\n") {
			if cmd, ok := strings.CutPrefix(l, label); ok && strings.HasSuffix(cmd, " "+id) {
				words := strings.Fields(cmd)
				if words[0] != "harn" {
					t.Fatalf("the hint %q does not run harn", cmd)
				}
				return words[1:]
			}
		}
		t.Fatalf("no %q line for %s:\n%s", label, id, human)
		return nil
	}
	if r := run(t, e.hookEnv(), "", printed("  approve:  ", conf.ID)...); r.code != 0 || !strings.Contains(r.stdout, "approved call-push") {
		t.Fatalf("the printed approve: %v", r)
	}
	if end := waitFor(t, s.ask, "turn.end"); end["status"] != "succeeded" {
		t.Fatalf("the confirmed call's turn: %v", end)
	}
	if r := run(t, e.hookEnv(), "", printed("  deny:     ", perm.ID)...); r.code != 0 {
		t.Fatalf("the printed deny: %v", r)
	}
	select {
	case r := <-s.hookDone:
		if !strings.Contains(r.stdout, `"behavior":"deny"`) {
			t.Fatalf("the hook got: %v", r)
		}
	case <-time.After(stateTimeout):
		t.Fatal("the waiting hook got no answer")
	}
}

// TestWatchShowsTheWholeCommandOfEachApproval: in `agents list --watch`
// (a real terminal), `a` on the harn session's row shows its call's
// command in full with its cwd, session and agent, and y confirms it; `d`
// on the hook's row shows its command with the escape sequence printed as
// text, not obeyed, and y denies it.
func TestWatchShowsTheWholeCommandOfEachApproval(t *testing.T) {
	e := askEnv(t)
	s := setupApprovals(t, e)
	_, conf := s.pending(t)
	w := startWatchPane(t, e.root, e.hookEnv(), 100, 40)
	w.waitScreen("the table", "a approve")
	harnSession := ""
	var rows []sessionJSON
	mustJSON(t, e.ok("agents", "list", "--json"), &rows)
	for _, r := range rows {
		if r.Agent == "harn" {
			harnSession = r.SessionID
		}
	}
	if harnSession == "" || harnSession != conf.Session {
		t.Fatalf("the harn session %q, the confirmation's %q", harnSession, conf.Session)
	}
	w.waitScreen("the harn row", harnSession[:6])
	w.sel(harnSession[:6])
	w.keys("a")
	scr := w.waitScreen("the confirmation's facts", "? y/n")
	for _, want := range []string{"$ " + pushCmd, "in " + s.harnDir, "agent harn", "approve shell (call call-push of task "} {
		if !strings.Contains(scr, want) {
			t.Fatalf("the watch lacks %q:\n%s", want, scr)
		}
	}
	w.keys("y")
	if end := waitFor(t, s.ask, "turn.end"); end["status"] != "succeeded" {
		t.Fatalf("the confirmed call's turn: %v", end)
	}
	eventually(t, stateTimeout, "the watch leaves the confirmation", func() (bool, string) {
		scr := w.screen()
		return !strings.Contains(scr, "? y/n"), scr
	})
	w.sel(s.sid[:6])
	w.keys("d")
	scr = w.waitScreen("the request's facts", "? y/n")
	flat := strings.Join(strings.Fields(scr), "") // the command wraps at the screen's width
	for _, want := range []string{"$echo'<b>hi</b><script>window.__pwned=1</script>'[31m&&gitpush--force-with-leaseoriginmain",
		"in" + s.cwd, "agentclaude-code"} {
		if !strings.Contains(flat, want) {
			t.Fatalf("the watch lacks %q:\n%s", want, scr)
		}
	}
	w.keys("y")
	select {
	case r := <-s.hookDone:
		if !strings.Contains(r.stdout, `"behavior":"deny"`) {
			t.Fatalf("the hook got: %v", r)
		}
	case <-time.After(stateTimeout):
		t.Fatal("the waiting hook got no answer from the watch")
	}
}

// TestBoardShowsWhatEachApprovalApprovesInABrowser: the board of a real
// node, in headless Chromium, shows the harn confirmation's command and
// cwd and the hook request's command as text (its markup runs nothing),
// and the Approve dialog names the command.
func TestBoardShowsWhatEachApprovalApprovesInABrowser(t *testing.T) {
	testsupport.Chromium(t)
	e := newEnv(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
	e.waitReady(e.spawn(append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s"), "node", "--data-dir", e.dataDir,
		"--socket", e.socket, "--http-port", addr))
	s := setupApprovals(t, e)
	_, conf := s.pending(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	if st := navigate(t, b, strings.TrimSpace(e.ok("web", "url"))); st != 200 {
		t.Fatalf("board: status %d", st)
	}
	harn := `article[data-id="` + conf.Session + `"]`
	hook := `article[data-id="` + s.sid + `"]`
	waitJS(t, b, 15*time.Second, `(document.querySelector('`+harn+` form.request') || {innerText: ''}).innerText.includes('`+pushCmd+`') && `+
		`(document.querySelector('`+hook+` form.request') || {innerText: ''}).innerText.includes('`+pushCmd+`')`)
	card := jsEval[string](t, b, `document.querySelector('`+harn+` form.request').innerText`)
	for _, want := range []string{"confirm: shell · harn · waiting", s.harnDir} {
		if !strings.Contains(card, want) {
			t.Fatalf("the harn card lacks %q: %q", want, card)
		}
	}
	hc := jsEval[string](t, b, `document.querySelector('`+hook+` form.request').innerText`)
	if !strings.Contains(hc, "<b>hi</b><script>window.__pwned=1</script>") || !strings.Contains(hc, s.cwd) || strings.Contains(hc, "\x1b") {
		t.Fatalf("the hook's card: %q", hc)
	}
	if jsEval[bool](t, b, `window.__pwned !== undefined || document.querySelector('article b') !== null`) {
		t.Fatal("markup in a command ran or made an element")
	}
	screenshot(t, b, "node-board-approval-facts.png")
	jsEval[bool](t, b, `document.querySelector('`+harn+` form.request button[value="approve"]').click(), true`)
	waitJS(t, b, 5*time.Second, `document.getElementById('confirm').open`)
	if what := jsEval[string](t, b, `document.getElementById('confirm-what').textContent`); !strings.Contains(what, pushCmd) || !strings.Contains(what, "agent harn") {
		t.Fatalf("the dialog says %q", what)
	}
	jsEval[bool](t, b, `document.getElementById('confirm-ok').click(), true`)
	if end := waitFor(t, s.ask, "turn.end"); end["status"] != "succeeded" {
		t.Fatalf("the confirmed call's turn: %v", end)
	}
	e.ok("agents", "deny", "r-") // the hook's request is the only one left: a unique prefix
	<-s.hookDone
}

// rawReceiver is a webhook target on loopback that keeps each body.
type rawReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newRawReceiver(t *testing.T) *rawReceiver {
	r := &rawReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		r.mu.Lock()
		r.bodies = append(r.bodies, req.Header.Get("Title")+"\n"+string(b))
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *rawReceiver) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

// TestWebhooksTellWhatEachApprovalApproves: a json webhook (a receiver on
// loopback, run for harn) gets the waiting call in full: the harn
// confirmation's and the hook request's whole command, cwd, kind and
// wait, stripped of escape sequences; an ntfy webhook (a push service
// that keeps messages) gets the summary, never the command's arguments.
func TestWebhooksTellWhatEachApprovalApproves(t *testing.T) {
	e := newEnv(t)
	e.startNode("--name", "solo", "--allow-private")
	e.waitLeader()
	jsonHook, ntfy := newRawReceiver(t), newRawReceiver(t)
	e.addWebhook(jsonHook.URL+"/harn", "--on", "needs_input")
	e.addWebhook(ntfy.URL+"/topic", "--on", "needs_input", "--format", "ntfy")
	s := setupApprovals(t, e)
	_, conf := s.pending(t)
	type req struct {
		ID, Kind, Tool, Summary, Command, Cwd string
		WaitingSince                          string `json:"waiting_since"`
	}
	got := map[string]req{}
	eventually(t, notifyTimeout, "a needs_input message for each session", func() (bool, string) {
		for _, b := range jsonHook.all() {
			var m struct {
				Session struct {
					ID      string `json:"id"`
					Request *req   `json:"request"`
				} `json:"session"`
			}
			_, body, _ := strings.Cut(b, "\n")
			if json.Unmarshal([]byte(body), &m) == nil && m.Session.Request != nil {
				got[m.Session.ID] = *m.Session.Request
			}
		}
		return len(got) == 2, strings.Join(jsonHook.all(), "\n---\n")
	})
	c, p := got[conf.Session], got[s.sid]
	if c.Kind != "confirmation" || c.ID != "call-push" || c.Command != pushCmd+" || touch "+s.marker || c.Cwd != s.harnDir || c.WaitingSince == "" {
		t.Fatalf("the confirmation's message: %+v", c)
	}
	if p.Kind != "permission" || p.Command != "echo '<b>hi</b><script>window.__pwned=1</script>' [31m && "+pushCmd || p.Cwd != s.cwd {
		t.Fatalf("the request's message: %+v", p)
	}
	eventually(t, notifyTimeout, "two ntfy messages", func() (bool, string) {
		return len(ntfy.all()) >= 2, strings.Join(ntfy.all(), "\n---\n")
	})
	for _, b := range ntfy.all() {
		if strings.Contains(b, "force-with-lease") || strings.Contains(b, s.cwd) || strings.Contains(b, s.harnDir) || strings.Contains(b, "<script>") {
			t.Fatalf("the ntfy message carries the call in full: %q", b)
		}
		if !strings.Contains(b, ": runs ") {
			t.Fatalf("the ntfy message lacks the summary: %q", b)
		}
	}
	e.ok("agents", "approve", conf.ID)
	waitFor(t, s.ask, "turn.end")
	e.ok("agents", "deny", "r-")
	<-s.hookDone
	_ = os.Remove(s.marker)
}
