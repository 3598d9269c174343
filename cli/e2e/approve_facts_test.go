package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// claudePermEdit is Claude Code's PermissionRequest for an Edit of path
// that replaces two lines with three.
func claudePermEdit(sid, cwd, path string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"PermissionRequest","tool_name":"Edit","tool_input":{"file_path":"` + path +
		`","old_string":"a\nb","new_string":"a\nb\nc"}}`
}

type pendingRow struct {
	ID, Session, Name, Handle, Tool, Detail, Cwd, Project, Place string
	WaitingMs                                                    int64 `json:"waiting_ms"`
	SessionWide                                                  bool  `json:"session_wide"`
}

// `harn agents pending` shows what is approved in full: the whole command
// of a Bash call, an Edit's file and diff summary, the cwd, the session's
// name (not its id) and how long it has waited. `approve` and `deny` take
// a unique prefix of a request id; an ambiguous one exits 6, an unknown
// one 3; --session-wide on a Claude Code request answers with the rule
// that allows the tool for the rest of the session.
func TestPendingShowsTheCallInFullAndTakesPrefixes(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := e.root
	bash, edit := "cc-facts-bash", "cc-facts-edit"
	for _, sid := range []string{bash, edit} {
		e.hook("claude-code", claudeStart(sid, cwd))
		e.hook("claude-code", claudePrompt(sid, cwd))
	}
	e.hook("claude-code", claudePreBash(bash, cwd, "f1"))
	hookDone := map[string]chan result{}
	for sid, payload := range map[string]string{bash: claudePermBash(bash, cwd, "f1"), edit: claudePermEdit(edit, cwd, cwd+"/main.go")} {
		ch := make(chan result, 1)
		hookDone[sid] = ch
		go func() {
			ch <- run(t, e.hookEnv(), payload, "hook", "claude-code", "--remote-approve", "--approve-wait", "30s")
		}()
	}
	var reqs []pendingRow
	eventually(t, stateTimeout, "both requests are listed", func() (bool, string) {
		mustJSON(t, e.ok("agents", "pending", "--json"), &reqs)
		return len(reqs) == 2, e.ok("agents", "pending")
	})
	by := map[string]pendingRow{}
	for _, r := range reqs {
		by[r.Session] = r
	}
	b, ed := by[bash], by[edit]
	name := e.status(bash).Name
	if b.Tool != "Bash" || b.Detail != "go test ./... # f1" || b.Cwd != cwd || b.Name != name || b.Handle != name || !b.SessionWide {
		t.Fatalf("the Bash request: %+v (session name %q)", b, name)
	}
	if ed.Tool != "Edit" || ed.Detail != cwd+"/main.go (+3/−2 lines)" {
		t.Fatalf("the Edit request: %+v", ed)
	}
	human := e.ok("agents", "pending")
	for _, want := range []string{"command:  go test ./... # f1", "file:     " + cwd + "/main.go (+3/−2 lines)", "cwd:      " + cwd,
		name + " on ", "waiting "} {
		if !strings.Contains(human, want) {
			t.Fatalf("pending lacks %q:\n%s", want, human)
		}
	}
	if strings.Contains(human, bash) {
		t.Fatalf("pending shows the session id, not its name:\n%s", human)
	}
	// The shortest prefixes: the common part is ambiguous, one more rune
	// names one request.
	common := 0
	for common < len(b.ID) && common < len(ed.ID) && b.ID[common] == ed.ID[common] {
		common++
	}
	if r := e.harn("", "agents", "approve", b.ID[:common]); r.code != 6 {
		t.Fatalf("an ambiguous prefix: %v, want exit 6", r)
	}
	if r := e.harn("", "agents", "deny", "r-no-such-request"); r.code != 3 {
		t.Fatalf("an unknown request: %v, want exit 3", r)
	}
	e.ok("agents", "approve", b.ID[:common+1], "--session-wide")
	e.ok("agents", "deny", ed.ID[:common+1], "--reason", "not that file")
	select {
	case r := <-hookDone[bash]:
		if !strings.Contains(r.stdout, `"updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"allow","destination":"session"}]`) {
			t.Fatalf("the session-wide approval's hook output: %v", r)
		}
	case <-time.After(cmdTimeout):
		t.Fatal("the Bash hook did not return after the approval")
	}
	select {
	case r := <-hookDone[edit]:
		if !strings.Contains(r.stdout, `"behavior":"deny"`) || !strings.Contains(r.stdout, "not that file") {
			t.Fatalf("the denied hook's output: %v", r)
		}
	case <-time.After(cmdTimeout):
		t.Fatal("the Edit hook did not return after the denial")
	}
}

// A session that needs input while its hook asks for no remote decision
// (installed without --remote-approve): `pending` says there is no open
// request, names the session waiting, and prints the command that would
// let it be approved from anywhere.
func TestPendingWithoutRemoteApproveNamesTheWaitingSession(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	sid, cwd := "cc-local-prompt", e.root
	e.hook("claude-code", claudeStart(sid, cwd))
	e.hook("claude-code", claudePrompt(sid, cwd))
	e.hook("claude-code", claudePreBash(sid, cwd, "h1"))
	e.hook("claude-code", claudePermBash(sid, cwd, "h1"))
	if st := e.status(sid); st.Activity != "needs_input" {
		t.Fatalf("after the permission request: %s", st.Activity)
	}
	r := e.harn("", "agents", "pending")
	if r.code != 0 || !strings.Contains(r.stdout, "no open permission requests") {
		t.Fatalf("%v", r)
	}
	name := e.status(sid).Name
	for _, want := range []string{name + " (claude-code on ", "needs input at the agent's own prompt",
		"harn hook install claude-code --remote-approve"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("the hint lacks %q: %v", want, r)
		}
	}
	// The hint runs as printed, and installs the hook that asks the mesh.
	home := filepath.Join(e.root, "home")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	words := strings.Fields("harn hook install claude-code --remote-approve")
	if ri := run(t, append(e.hookEnv(), "HOME="+home), "", words[1:]...); ri.code != 0 {
		t.Fatalf("the hint as printed: %v", ri)
	}
	b, err := os.ReadFile(filepath.Join(home, ".claude", "settings.json"))
	if err != nil || !strings.Contains(string(b), "--remote-approve") {
		t.Fatalf("the hint installed no remote-approve hook (%v):\n%s", err, b)
	}
}

// A needs_input webhook (json format) carries the session's page on the
// board, without the token, and the open request: its id, the tool, the
// safe summary and the command in full.
func TestNeedsInputWebhookCarriesTheBoardLinkAndTheRequest(t *testing.T) {
	e := newEnv(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
	e.startNode("--name", "solo", "--allow-private", "--http-port", addr)
	e.waitLeader()
	srv := newHookServer(t, 0)
	e.addWebhook(srv.URL+"/harn", "--on", "needs_input")
	sid, cwd := "cc-webhook-facts", e.root
	e.hook("claude-code", claudeStart(sid, cwd))
	e.hook("claude-code", claudePrompt(sid, cwd))
	e.hook("claude-code", claudePreBash(sid, cwd, "n1"))
	ch := make(chan result, 1)
	go func() {
		ch <- run(t, e.hookEnv(), claudePermBash(sid, cwd, "n1"), "hook", "claude-code", "--remote-approve", "--approve-wait", "30s")
	}()
	srv.waitKinds(t, sid, "needs_input")
	var reqs []pendingRow
	mustJSON(t, e.ok("agents", "pending", "--json"), &reqs)
	if len(reqs) != 1 {
		t.Fatalf("pending: %+v", reqs)
	}
	var m hookMsg
	for _, x := range srv.messages() {
		if x.Session.ID == sid {
			m = x
		}
	}
	if m.Session.Link != "http://"+addr+"/s/"+sid || strings.Contains(m.Session.Link, "token") {
		t.Fatalf("the link: %q (board on %s)", m.Session.Link, addr)
	}
	if r := m.Session.Request; r == nil || r.ID != reqs[0].ID || r.Tool != "Bash" || r.Detail != "go test ./... # n1" || r.Summary == "" {
		t.Fatalf("the request: %+v, want %s", m.Session.Request, reqs[0].ID)
	}
	e.ok("agents", "deny", reqs[0].ID)
	select {
	case <-ch:
	case <-time.After(cmdTimeout):
		t.Fatal("the hook did not return after the denial")
	}
}
