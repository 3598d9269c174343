package e2e

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport"
)

// TestBoardActionsReachTheTaskRuntimeAndTheWaitingHook: from the board in
// a browser, Approve answers a hook's open permission request (the hook
// gets allow), Steer reaches a running harn task, and Cancel ends it;
// each asks for confirmation and shows the node's result.
func TestBoardActionsReachTheTaskRuntimeAndTheWaitingHook(t *testing.T) {
	testsupport.Chromium(t)
	fake := buildFakeAgent(t)
	e := newEnv(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
	environ := append(append([]string(nil), e.base...), "HARN_TASK_GRACE=1s",
		"FAKEAGENT_HOOK="+harnBin+" hook claude-code --data-dir "+e.dataDir+" --socket "+e.socket)
	e.waitReady(e.spawn(environ, "node", "--data-dir", e.dataDir, "--socket", e.socket, "--http-port", addr))
	cmd := fake + " -p --output-format stream-json --input-format stream-json"

	// The task runs until it is cancelled (a turn that waited for a file
	// ended by itself after 20 s on a slow machine, before the Cancel).
	task := e.task("start", "--exec", cmd, "hang")
	eventually(t, stateTimeout, "the task runs", func() (bool, string) {
		v := e.task("show", task.Task.ID)
		return v.Task.State == "running", v.Task.State
	})

	perm := `{"session_id":"web-ask","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"make deploy"}}`
	hookDone := make(chan result, 1)
	go func() {
		hookDone <- run(t, e.hookEnv(), perm, "hook", "claude-code", "--remote-approve", "--approve-wait", "60s")
	}()
	eventually(t, stateTimeout, "the request is pending", func() (bool, string) {
		out := e.ok("agents", "pending", "--json")
		return strings.Contains(out, "web-ask"), out
	})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	url := strings.TrimSpace(e.ok("web", "url"))
	if st := navigate(t, b, url); st != 200 {
		t.Fatalf("board: status %d", st)
	}
	ask := `article[data-id="web-ask"]`
	run := `article[data-id="` + task.Session + `"]`
	waitJS(t, b, 10*time.Second, `document.querySelector('`+ask+` button[value="approve"]') !== null && document.querySelector('`+run+` button[value="steer"]') !== null`)
	screenshot(t, b, "node-board-actions.png")

	// Approve: a dialog first, nothing sent before its confirmation.
	jsEval[bool](t, b, `document.querySelector('`+ask+` button[value="approve"]').click(), true`)
	waitJS(t, b, 5*time.Second, `document.getElementById('confirm').open`)
	select {
	case r := <-hookDone:
		t.Fatalf("the hook was answered before the confirmation: %v", r)
	default:
	}
	jsEval[bool](t, b, `document.getElementById('confirm-ok').click(), true`)
	waitJS(t, b, 10*time.Second, `document.getElementById('confirm-result').textContent.includes('approved')`)
	select {
	case r := <-hookDone:
		if !strings.Contains(r.stdout, `"behavior":"allow"`) {
			t.Fatalf("the hook got: %v", r)
		}
	case <-time.After(stateTimeout):
		t.Fatal("the waiting hook got no answer from the board's approval")
	}
	jsEval[bool](t, b, `document.getElementById('confirm-close').click(), true`)
	waitJS(t, b, 5*time.Second, `!document.getElementById('confirm').open`)

	// Steer: the text goes to the running agent.
	waitJS(t, b, 10*time.Second, `document.querySelector('`+run+` button[value="steer"]') !== null`)
	jsEval[bool](t, b, `document.querySelector('`+run+` button[value="steer"]').click(), true`)
	waitJS(t, b, 5*time.Second, `document.getElementById('confirm').open && !document.getElementById('confirm-text-wrap').hidden`)
	jsEval[bool](t, b, `document.getElementById('confirm-text').value = 'use the staging database', document.getElementById('confirm-ok').click(), true`)
	waitJS(t, b, 10*time.Second, `/steer/.test(document.getElementById('confirm-result').textContent)`)
	if res := jsEval[string](t, b, `document.getElementById('confirm-result').textContent`); strings.Contains(res, "failed") {
		t.Fatalf("steer from the board: %s", res)
	}
	jsEval[bool](t, b, `document.getElementById('confirm-close').click(), true`)
	waitJS(t, b, 5*time.Second, `!document.getElementById('confirm').open`)

	// Cancel: the task goes through its barrier and ends cancelled.
	jsEval[bool](t, b, `document.querySelector('`+run+` button[value="cancel"]').click(), true`)
	waitJS(t, b, 5*time.Second, `document.getElementById('confirm').open`)
	jsEval[bool](t, b, `document.getElementById('confirm-ok').click(), true`)
	// The task's own record is the truth; the dialog shows the node's
	// answer once the cancel (its barrier included) has returned.
	e.waitTask(task.Task.ID, "cancelled")
	waitJS(t, b, 30*time.Second, `/cancel/i.test(document.getElementById('confirm-result').textContent)`)
	if res := jsEval[string](t, b, `document.getElementById('confirm-result').textContent`); strings.Contains(res, "failed") {
		t.Fatalf("cancel from the board: %s", res)
	}
}
