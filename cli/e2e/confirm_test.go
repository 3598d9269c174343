package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Confirmations, reductions and the mesh-wide switches, driven with the
// Claude Code PreToolUse payloads of ../shared/spec/hooks.md.

func claudePre(sid, cwd, tool, input, id string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_input":` + input + `,"tool_use_id":"` + id + `"}`
}

func claudePost(sid, cwd, tool, input, id string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"PostToolUse","tool_name":"` + tool + `","tool_input":` + input +
		`,"tool_response":{"stdout":"","stderr":"","interrupted":false,"isImage":false},"tool_use_id":"` + id + `","duration_ms":40}`
}

// preDecision is a PreToolUse hook's answer.
type preDecision struct {
	H struct {
		Decision string `json:"permissionDecision"`
		Reason   string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

func decisionOf(t *testing.T, r result) preDecision {
	t.Helper()
	var d preDecision
	if strings.TrimSpace(r.stdout) == "" {
		return d
	}
	mustJSON(t, r.stdout, &d)
	return d
}

type taskGrantsJSON struct {
	Task struct {
		ID           string   `json:"id"`
		State        string   `json:"state"`
		PendingCalls []string `json:"pending_calls"`
	} `json:"task"`
	Grants *struct {
		Limits []struct {
			Capability string `json:"capability"`
			Level      string `json:"level"`
		} `json:"limits"`
		Ceiling []struct {
			Capability string `json:"capability"`
			Level      string `json:"level"`
		} `json:"ceiling"`
	} `json:"grants"`
}

func writeGrants(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "grants.txt")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type hookDone struct {
	res result
	at  time.Time
}

// hookAsync runs a hook in the background; its answer arrives on the
// channel.
func (e *env) hookAsync(payload string, args ...string) chan hookDone {
	ch := make(chan hookDone, 1)
	go func() {
		r := run(e.t, e.hookEnv(), payload, append([]string{"hook", "claude-code"}, args...)...)
		ch <- hookDone{r, time.Now()}
	}()
	return ch
}

func (e *env) waitPending(task, call string) {
	e.t.Helper()
	eventually(e.t, stateTimeout, "call "+call+" waits for a confirmation", func() (bool, string) {
		var r taskGrantsJSON
		mustJSON(e.t, e.ok("task", "show", task, "--json"), &r)
		for _, c := range r.Task.PendingCalls {
			if c == call {
				return true, ""
			}
		}
		return false, strings.Join(r.Task.PendingCalls, ",")
	})
}

func resolvedIn(evs []eventJSON, key string) map[string]any {
	for _, ev := range evs {
		if ev.Type == "interaction.input_resolved" && ev.Attrs["request_key"] == key && ev.Attrs["decision"] != nil {
			return ev.Attrs
		}
	}
	return nil
}

func TestAConfirmGrantWaitsAsNeedsInputAndTaskConfirmAllowsTheCall(t *testing.T) {
	e, _ := taskEnv(t)
	sid := "cc-confirm-1"
	e.hook("claude-code", claudeStart(sid, e.root))
	e.hook("claude-code", claudePrompt(sid, e.root))
	g := writeGrants(t, e.root, "profile read-only\nexecute Bash(git *) confirm\n")
	task := e.task("start", "--session", sid, "--grants", g, "tidy the branch").Task.ID

	in := `{"command":"git status --short","description":"Show the working tree"}`
	ch := e.hookAsync(claudePre(sid, e.root, "Bash", in, "toolu_c1"), "--approve-wait", "20s")
	e.waitPending(task, "toolu_c1")
	eventually(t, stateTimeout, "the row reads needs_input", func() (bool, string) {
		s := e.status(sid)
		return s.Activity == "needs_input", s.Activity
	})
	select {
	case d := <-ch:
		t.Fatalf("the hook answered before the confirmation: %v", d.res)
	default:
	}
	confirmed := time.Now()
	e.ok("task", "confirm", task, "toolu_c1")
	var got hookDone
	select {
	case got = <-ch:
	case <-time.After(stateTimeout):
		t.Fatal("the hook did not answer after the confirmation")
	}
	if d := decisionOf(t, got.res); d.H.Decision != "allow" || !strings.Contains(d.H.Reason, localOperator()) {
		t.Fatalf("after the confirmation the hook must allow: %v", got.res)
	}
	if d := got.at.Sub(confirmed); d > 2*time.Second {
		t.Fatalf("the hook answered %v after the confirmation", d)
	}
	// The call runs: nothing waits, the session works, and the trace holds
	// the decision and who gave it.
	var show taskGrantsJSON
	mustJSON(t, e.ok("task", "show", task, "--json"), &show)
	if len(show.Task.PendingCalls) != 0 || show.Task.State != "running" {
		t.Fatalf("after the confirmation: %+v", show.Task)
	}
	if s := e.status(sid); s.Activity != "working" {
		t.Fatalf("after the confirmation the row reads %s", s.Activity)
	}
	if a := resolvedIn(e.trace(sid), "toolu_c1"); a == nil || a["decision"] != "allow" || !strings.Contains(a["by"].(string), localOperator()) {
		t.Fatalf("trace: the resolution with its decision and operator is missing: %v", a)
	}
	e.hook("claude-code", claudePost(sid, e.root, "Bash", in, "toolu_c1"))

	// A repeated PreToolUse of the same call gets the first decision at
	// once: allow, because it was confirmed.
	if d := decisionOf(t, e.hook("claude-code", claudePre(sid, e.root, "Bash", in, "toolu_c1"))); d.H.Decision != "allow" {
		t.Fatalf("a repeat of the confirmed call: %+v", d)
	}
	// A second answer is refused, naming the first.
	if r := e.harn("", "task", "deny", task, "toolu_c1"); r.code != 15 || !strings.Contains(r.stderr, "confirmed") {
		t.Fatalf("a second answer must be refused with exit 15: %v", r)
	}
}

func TestADeniedConfirmationDeniesTheCallAndARepeatGetsTheFirstDecision(t *testing.T) {
	e, _ := taskEnv(t)
	sid := "cc-confirm-2"
	e.hook("claude-code", claudeStart(sid, e.root))
	e.hook("claude-code", claudePrompt(sid, e.root))
	g := writeGrants(t, e.root, "profile read-only\nexecute Bash(git *) confirm\n")
	task := e.task("start", "--session", sid, "--grants", g, "publish").Task.ID

	push := `{"command":"git push --force origin main","description":"Push"}`
	ch := e.hookAsync(claudePre(sid, e.root, "Bash", push, "toolu_d1"), "--approve-wait", "20s")
	e.waitPending(task, "toolu_d1")
	e.ok("task", "deny", task, "toolu_d1", "--reason", "not on main")
	got := <-ch
	if d := decisionOf(t, got.res); d.H.Decision != "deny" || !strings.Contains(d.H.Reason, "not on main") {
		t.Fatalf("a denied confirmation: %v", got.res)
	}
	if a := resolvedIn(e.trace(sid), "toolu_d1"); a == nil || a["decision"] != "deny" {
		t.Fatalf("trace: the denial is missing: %v", a)
	}
	if s := e.status(sid); s.Activity == "needs_input" {
		t.Fatalf("after the denial the row still reads needs_input")
	}
	// The same tool_use_id again: the first decision, at once, with no
	// new wait and no fresh allow.
	start := time.Now()
	if d := decisionOf(t, e.hook("claude-code", claudePre(sid, e.root, "Bash", push, "toolu_d1"), "--approve-wait", "20s")); d.H.Decision != "deny" || !strings.Contains(d.H.Reason, "not on main") {
		t.Fatalf("a repeat of a denied call must be denied with the first reason: %+v", d)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("a repeat of an answered call waited again")
	}
	// A call outside the grants is refused, and so is its repeat.
	rm := `{"command":"rm -rf build","description":"Clean"}`
	for i := 0; i < 2; i++ {
		if d := decisionOf(t, e.hook("claude-code", claudePre(sid, e.root, "Bash", rm, "toolu_d2"))); d.H.Decision != "deny" {
			t.Fatalf("try %d of a call outside the grants: %+v", i, d)
		}
	}
	// No answer within the wait: denied, never allowed.
	r := e.hook("claude-code", claudePre(sid, e.root, "Bash", `{"command":"git tag v1"}`, "toolu_d3"), "--approve-wait", "1s")
	if d := decisionOf(t, r); d.H.Decision != "deny" || !strings.Contains(d.H.Reason, "confirm") {
		t.Fatalf("an unanswered confirmation: %v", r)
	}
	if r := e.harn("", "task", "confirm", task, "toolu_d3"); r.code != 15 {
		t.Fatalf("confirming a call denied for lack of an answer: %v", r)
	}
}

func TestTaskReduceRefusesACallAtTheOldLevelAndSupersedeKeepsIt(t *testing.T) {
	e, _ := taskEnv(t)
	sid := "cc-reduce-1"
	e.hook("claude-code", claudeStart(sid, e.root))
	e.hook("claude-code", claudePrompt(sid, e.root))
	task := e.task("start", "--session", sid, "--profile", "full", "build it").Task.ID
	in := `{"command":"make build","description":"Build"}`
	if d := decisionOf(t, e.hook("claude-code", claudePre(sid, e.root, "Bash", in, "toolu_r1"))); d.H.Decision != "" {
		t.Fatalf("Bash under the full profile: %+v", d)
	}
	e.hook("claude-code", claudePost(sid, e.root, "Bash", in, "toolu_r1"))

	var red taskGrantsJSON
	mustJSON(t, e.ok("task", "reduce", task, "Bash", "load", "--reason", "no more shell", "--json"), &red)
	if red.Grants == nil || len(red.Grants.Limits) != 1 || red.Grants.Limits[0].Level != "load" {
		t.Fatalf("task reduce --json: %+v", red)
	}
	d := decisionOf(t, e.hook("claude-code", claudePre(sid, e.root, "Bash", in, "toolu_r2")))
	if d.H.Decision != "deny" || !strings.Contains(d.H.Reason, "load") {
		t.Fatalf("a call at the old level after the reduction: %+v", d)
	}
	// The ceiling never grows.
	if r := e.harn("", "task", "reduce", task, "Bash", "execute"); r.code != 15 {
		t.Fatalf("raising the ceiling must be refused with exit 15: %v", r)
	}
	if r := e.harn("", "task", "reduce", task, "Bash", "sudo"); r.code != 2 {
		t.Fatalf("an unknown level is a usage error: %v", r)
	}
	// Supersede: the replacement keeps the reduction.
	next := e.task("supersede", "--session", sid, "--profile", "full", "build it again").Task.ID
	eventually(t, stateTimeout, "the replacement runs", func() (bool, string) {
		r := e.task("show", next)
		return r.Task.State == "running", r.Task.State
	})
	var g taskGrantsJSON
	mustJSON(t, e.ok("task", "grants", next, "--json"), &g)
	for _, h := range g.Grants.Ceiling {
		if h.Capability == "Bash" && h.Level != "load" {
			t.Fatalf("the replacement regained Bash: %s", h.Level)
		}
	}
	if d := decisionOf(t, e.hook("claude-code", claudePre(sid, e.root, "Bash", in, "toolu_r3"))); d.H.Decision != "deny" {
		t.Fatalf("Bash in the replacement: %+v", d)
	}
	// Other tools are untouched.
	if d := decisionOf(t, e.hook("claude-code", claudePre(sid, e.root, "Read", `{"file_path":"`+e.root+`/x"}`, "toolu_r4"))); d.H.Decision != "" {
		t.Fatalf("Read in the replacement: %+v", d)
	}
}

// switchJSON is `harn capability|provider … --json`.
type switchJSON struct {
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	Active   bool     `json:"active"`
	Changed  bool     `json:"changed"`
	Mesh     bool     `json:"mesh"`
	By       string   `json:"by"`
	Revoked  []string `json:"revoked"`
	Disabled []string `json:"disabled_providers"`
}

func TestCapabilityRevokeAndProviderDisableOnOneNodeRefuseTheCallOnAnothersTask(t *testing.T) {
	s0, n1 := trustedMeshWith(t, "--remote-control", "n1")
	sid := "cc-switch-1"
	startClaudeSession(s0, sid, s0.root)
	var started taskResultJSON
	mustJSON(t, s0.ok("task", "start", "--session", sid, "--profile", "full", "work", "--json"), &started)
	bash := `{"command":"make build","description":"Build"}`
	pre := func(id string) preDecision {
		t.Helper()
		return decisionOf(t, s0.hook("claude-code", claudePre(sid, s0.root, "Bash", bash, id)))
	}
	if d := pre("toolu_s0"); d.H.Decision != "" {
		t.Fatalf("before the revocation: %+v", d)
	}
	var sw switchJSON
	mustJSON(t, n1.ok("capability", "revoke", "Bash", "--reason", "audit", "--json"), &sw)
	if !sw.Mesh || !sw.Active || !sw.Changed || !strings.HasSuffix(sw.By, localOperator()+"n1") {
		t.Fatalf("capability revoke --json: %+v", sw)
	}
	n := 0
	eventually(t, stateTimeout, "s0 refuses Bash", func() (bool, string) {
		n++
		d := pre("toolu_s" + string(rune('a'+n%26)) + time.Now().Format("150405.000"))
		return d.H.Decision == "deny" && strings.Contains(d.H.Reason, "revoked"), d.H.Reason
	})
	mustJSON(t, n1.ok("capability", "restore", "Bash", "--json"), &sw)
	if sw.Active || !sw.Changed {
		t.Fatalf("capability restore --json: %+v", sw)
	}
	eventually(t, stateTimeout, "s0 allows Bash again", func() (bool, string) {
		d := pre("toolu_t" + time.Now().Format("150405.000"))
		return d.H.Decision == "", d.H.Reason
	})

	mustJSON(t, n1.ok("provider", "disable", "claude-code", "--json"), &sw)
	if !sw.Mesh || !sw.Active || sw.Kind != "provider" {
		t.Fatalf("provider disable --json: %+v", sw)
	}
	eventually(t, stateTimeout, "s0 refuses the disabled provider's Read", func() (bool, string) {
		d := decisionOf(t, s0.hook("claude-code", claudePre(sid, s0.root, "Read", `{"file_path":"/tmp/x"}`, "toolu_p"+time.Now().Format("150405.000"))))
		return d.H.Decision == "deny" && strings.Contains(d.H.Reason, "disabled"), d.H.Reason
	})
	mustJSON(t, n1.ok("provider", "enable", "claude-code", "--json"), &sw)
	eventually(t, stateTimeout, "s0 allows Read again", func() (bool, string) {
		d := decisionOf(t, s0.hook("claude-code", claudePre(sid, s0.root, "Read", `{"file_path":"/tmp/x"}`, "toolu_q"+time.Now().Format("150405.000"))))
		return d.H.Decision == "", d.H.Reason
	})
	// A reduction from n1 is routed to s0, the task's owner.
	var red taskGrantsJSON
	mustJSON(t, n1.ok("task", "reduce", started.Task.ID, "Read", "inspect", "--json"), &red)
	if red.Grants == nil || len(red.Grants.Limits) != 1 {
		t.Fatalf("a routed reduction: %+v", red)
	}
	if d := decisionOf(t, s0.hook("claude-code", claudePre(sid, s0.root, "Read", `{"file_path":"/tmp/x"}`, "toolu_x1"))); d.H.Decision != "deny" {
		t.Fatalf("Read after the routed reduction: %+v", d)
	}
	// The switches and who set them are in the task's ledger on s0, and
	// both nodes agree on the switches now in force.
	var here, there switchJSON
	mustJSON(t, s0.ok("capability", "restore", "Bash", "--json"), &here)
	mustJSON(t, n1.ok("capability", "restore", "Bash", "--json"), &there)
	if here.Changed || there.Changed || len(here.Revoked)+len(there.Revoked)+len(here.Disabled)+len(there.Disabled) != 0 {
		t.Fatalf("after restoring everything: s0 %+v, n1 %+v", here, there)
	}
}

// trustedMeshWith is trustedMesh with extra flags for s0 (its
// remote-control policy).
func trustedMeshWith(t *testing.T, s0Flags ...string) (s0, n1 *meshNode) {
	t.Helper()
	return trustedMeshOf(t, s0Flags, nil)
}

// trustedMeshOf is trustedMeshWith with flags for n1 too.
func trustedMeshOf(t *testing.T, s0Flags, n1Flags []string) (s0, n1 *meshNode) {
	t.Helper()
	s0 = newMeshNode(t, "s0", append([]string{"--server"}, s0Flags...)...)
	var init struct {
		JoinToken string `json:"join_token"`
	}
	mustJSON(t, s0.ok("mesh", "init", "--name", "s0", "--json"), &init)
	s0.start()
	eventually(t, meshTimeout, "s0 leads", func() (bool, string) {
		r, ok, why := s0.raftState()
		return ok && r.Leader == "s0", why
	})
	rpc := net.JoinHostPort("127.0.0.1", strconv.Itoa(s0.rpc))
	n1 = newMeshNode(t, "n1", append([]string{"--join", s0.gossipAddr, "--join-rpc", rpc, "--join-token", init.JoinToken}, n1Flags...)...)
	n1.start()
	waitAllAlive(t, s0, n1)
	return s0, n1
}

// waitAllAlive waits until each of nodes sees all of them alive.
func waitAllAlive(t *testing.T, nodes ...*meshNode) {
	t.Helper()
	eventually(t, meshTimeout, "every member alive on each", func() (bool, string) {
		for _, m := range nodes {
			ms, ok, why := m.members()
			if !ok {
				return false, why
			}
			alive := 0
			for _, x := range ms {
				if x.Status == "alive" {
					alive++
				}
			}
			if alive != len(nodes) {
				return false, fmt.Sprintf("%s sees %v", m.name, ms)
			}
		}
		return true, ""
	})
}

// boardAction POSTs an action form to e's board as its own page would
// (the board's cookie, its Origin), with the page's CSRF token or without.
func boardAction(t *testing.T, e *env, form url.Values, withToken bool) (int, string) {
	t.Helper()
	b := e.board()
	cookie := b.login(t)
	req, _ := http.NewRequest("GET", b.base, nil)
	req.AddCookie(cookie)
	_, page := do(t, req)
	m := csrfMeta.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the board's page")
	}
	if withToken {
		form.Set("csrf", m[1])
	}
	form.Set("confirmed", "1")
	return b.postAction(t, cookie, form, map[string]string{"Origin": b.origin()})
}

func TestTheBoardsApproveAnswersAWaitingConfirmation(t *testing.T) {
	e := newEnv(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
	e.startNode("--http-port", addr)
	sid := "cc-board-confirm"
	e.hook("claude-code", claudeStart(sid, e.root))
	e.hook("claude-code", claudePrompt(sid, e.root))
	g := writeGrants(t, e.root, "profile read-only\nexecute Edit(src/**) confirm\n")
	task := e.task("start", "--session", sid, "--grants", g, "edit the sources").Task.ID
	in := `{"file_path":"` + e.root + `/src/app.go","old_string":"a","new_string":"b"}`
	ch := e.hookAsync(claudePre(sid, e.root, "Edit", in, "toolu_b1"), "--approve-wait", "20s")
	e.waitPending(task, "toolu_b1")
	form := func() url.Values {
		return url.Values{"kind": {"approve"}, "session": {sid}, "task": {task}, "request": {"toolu_b1"}, "request_kind": {"confirmation"}}
	}
	// Without the page's token (another site's form): refused, and the
	// call still waits.
	if code, body := boardAction(t, e, form(), false); code != http.StatusForbidden {
		t.Fatalf("a board action without the CSRF token: %d %s", code, body)
	}
	e.waitPending(task, "toolu_b1")
	code, body := boardAction(t, e, form(), true)
	if code != http.StatusOK {
		t.Fatalf("board approve: %d %s", code, body)
	}
	got := <-ch
	if d := decisionOf(t, got.res); d.H.Decision != "allow" || !strings.Contains(d.H.Reason, "board@") {
		t.Fatalf("the board's approval must allow the call: %v", got.res)
	}
	if a := resolvedIn(e.trace(sid), "toolu_b1"); a == nil || a["decision"] != "allow" {
		t.Fatalf("trace: %v", a)
	}
}

// localOperator is how a node records an operator action of this test
// process's user on its socket: "user (uid N)@node" (the part before the
// node's name).
func localOperator() string {
	return fmt.Sprintf(" (uid %d)@", os.Getuid())
}
