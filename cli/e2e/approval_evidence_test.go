package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Claude Code's payloads for one Bash call that asks for permission (after
// ../shared/spec/hooks.md): PreToolUse names the call (tool_use_id),
// PermissionRequest does not, and PostToolUse names it again with a
// tool_input that lacks "description".
func claudePermBash(sid, cwd, marker string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"go test ./... # ` + marker + `","description":"Run the tests"},` +
		`"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"go test:*"}],"behavior":"allow","destination":"localSettings"}]}`
}

func claudePostBashBare(sid, cwd, marker string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"go test ./... # ` + marker + `"},` +
		`"tool_response":{"stdout":"ok","stderr":"","interrupted":false,"isImage":false},"tool_use_id":"toolu_` + marker + `","duration_ms":812}`
}

// An approval given on n1 for a Claude Code session on s0 is evidence:
// within a second of `harn agents approve` returning, the session's row on
// both nodes has left needs_input, and its trace (read from n1) holds the
// interaction.input_resolved with the decision and the operator. The
// agent's PostToolUse, whose tool_input lacks "description", then changes
// nothing.
func TestRemoteApprovalTurnsTheRowWorkingOnEveryNodeWithinASecond(t *testing.T) {
	s0, n1 := trustedMesh(t, "HARN_REMOTE_CONTROL=n1")
	sid, cwd := "cc-approved-build", s0.root
	startClaudeSession(s0, sid, cwd)
	s0.hook("claude-code", claudePreBash(sid, cwd, "b1"))
	type hookOut struct {
		res result
		at  time.Time
	}
	ch := make(chan hookOut, 1)
	go func() {
		r := run(t, s0.hookEnv(), claudePermBash(sid, cwd, "b1"), "hook", "claude-code", "--remote-approve", "--approve-wait", "20s")
		ch <- hookOut{r, time.Now()}
	}()
	for _, m := range []*meshNode{s0, n1} {
		eventually(t, meshTimeout, m.name+" shows the session needs_input", func() (bool, string) {
			r, ok, why := m.session(false, sid)
			return ok && r.Activity == "needs_input", why + r.String()
		})
	}
	var reqs []struct{ ID, Session string }
	eventually(t, stateTimeout, "n1 lists s0's open request", func() (bool, string) {
		mustJSON(t, n1.ok("agents", "pending", "--json"), &reqs)
		return len(reqs) == 1 && reqs[0].Session == sid, n1.ok("agents", "pending")
	})
	n1.ok("agents", "approve", reqs[0].ID, "--reason", "tests are safe")
	approved := time.Now()
	left := map[string]time.Duration{}
	for deadline := approved.Add(10 * time.Second); len(left) < 2 && time.Now().Before(deadline); {
		for _, m := range []*meshNode{s0, n1} {
			if _, done := left[m.name]; done {
				continue
			}
			if r, ok, _ := m.session(false, sid); ok && r.Activity != "needs_input" {
				if r.Activity != "working" {
					t.Fatalf("%s: after the approval the session is %s, want working", m.name, r.Activity)
				}
				left[m.name] = time.Since(approved)
			}
		}
	}
	for _, m := range []*meshNode{s0, n1} {
		d, ok := left[m.name]
		if !ok {
			t.Fatalf("%s still shows needs_input 10 s after the approval", m.name)
		}
		if d > time.Second {
			t.Fatalf("%s showed the approval %v after `agents approve` returned; want within 1 s", m.name, d)
		}
		t.Logf("%s: working %v after the approval", m.name, d)
	}
	got := <-ch
	if !strings.Contains(got.res.stdout, `"behavior":"allow"`) {
		t.Fatalf("hook output: %v", got.res)
	}
	var evs []eventJSON
	mustJSON(t, n1.ok("agents", "trace", sid, "--json"), &evs)
	var resolved *eventJSON
	for i := range evs {
		if evs[i].Type == "interaction.input_resolved" {
			resolved = &evs[i]
		}
	}
	if resolved == nil || resolved.Attrs["decision"] != "allow" || !strings.Contains(resolved.Attrs["by"].(string), "n1") ||
		resolved.Attrs["reason"] != "tests are safe" || resolved.Attrs["request_key"] == "" || resolved.Node != "s0" {
		t.Fatalf("the trace's input_resolved: %+v (all: %v)", resolved, types(evs))
	}
	s0.hook("claude-code", claudePostBashBare(sid, cwd, "b1"))
	if st := s0.status(sid); st.Activity != "working" {
		t.Fatalf("after the post-use: %s", st.Activity)
	}
}

// PostToolUse whose tool_input lacks a field the PermissionRequest had
// ("description") still resolves the request: the request is keyed by
// the call its PreToolUse named (tool_use_id).
func TestPostToolUseWithoutDescriptionResolvesThePermissionRequest(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	sid, cwd := "cc-bare-post", e.root
	e.hook("claude-code", claudeStart(sid, cwd))
	e.hook("claude-code", claudePrompt(sid, cwd))
	e.hook("claude-code", claudePreBash(sid, cwd, "p1"))
	e.hook("claude-code", claudePermBash(sid, cwd, "p1"))
	if st := e.status(sid); st.Activity != "needs_input" {
		t.Fatalf("after the permission request: %s", st.Activity)
	}
	e.hook("claude-code", claudePostBashBare(sid, cwd, "p1"))
	if st := e.status(sid); st.Activity != "working" || st.ActivitySource != "interaction.input_resolved" {
		t.Fatalf("after the post-use without description: %s from %s", st.Activity, st.ActivitySource)
	}
}

// `harn hook install claude-code --remote-approve --approve-wait 2m`
// writes, into CLAUDE_CONFIG_DIR, the entries that wait with a timeout of
// at least 130 s; `harn doctor` flags an entry cut back to 10 s, with the
// fix.
func TestHookInstallTimeoutFollowsTheApproveWait(t *testing.T) {
	e := newEnv(t)
	home, cfg := filepath.Join(e.root, "home"), filepath.Join(e.root, "claude-cfg")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(e.hookEnv(), "HOME="+home, "CLAUDE_CONFIG_DIR="+cfg)
	if r := run(t, env, "", "hook", "install", "claude-code", "--remote-approve", "--approve-wait", "2m"); r.code != 0 {
		t.Fatalf("%v", r)
	}
	path := filepath.Join(cfg, "settings.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string  `json:"command"`
				Timeout float64 `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	mustJSON(t, string(b), &f)
	for _, ev := range []string{"PermissionRequest", "PreToolUse"} {
		h := f.Hooks[ev][0].Hooks[0]
		if !strings.Contains(h.Command, "--approve-wait 2m0s") || h.Timeout < 130 {
			t.Fatalf("%s entry: %+v; want the 2m wait and a timeout of at least 130", ev, h)
		}
	}
	if r := run(t, env, "", "doctor", "--json"); strings.Contains(r.stdout, "does not exceed its wait") {
		t.Fatalf("doctor flags harn's own timeouts: %s", r.stdout)
	}
	short := strings.ReplaceAll(string(b), `"timeout": 135`, `"timeout": 10`)
	if err := os.WriteFile(path, []byte(short), 0o644); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Checks []struct{ Check, Status, Detail, Fix string } `json:"checks"`
	}
	r := run(t, env, "", "doctor", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v: %v", err, r)
	}
	found := 0
	for _, c := range rep.Checks {
		if c.Check == "hooks claude-code" && c.Status == "finding" && strings.Contains(c.Detail, "does not exceed its wait 2m0s") &&
			strings.Contains(c.Fix, "harn hook install claude-code --remote-approve --approve-wait 2m0s") {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("want a finding for each of PreToolUse and PermissionRequest, got %d: %s", found, r.stdout)
	}
}

// A node whose policy does not name the caller refuses its answer (exit
// 16), and records nothing: the session still needs input and its trace
// holds no input_resolved once the refusal returned (the owner records an
// answer before the answer returns). The owner's own operator then denies
// it, which is recorded with the local operator.
func TestRefusedRemoteAnswerRecordsNothing(t *testing.T) {
	s0, n1 := trustedMesh(t, "HARN_REMOTE_CONTROL=off")
	sid, cwd := "cc-refused-answer", s0.root
	startClaudeSession(s0, sid, cwd)
	s0.hook("claude-code", claudePreBash(sid, cwd, "r1"))
	ch := make(chan result, 1)
	go func() {
		ch <- run(t, s0.hookEnv(), claudePermBash(sid, cwd, "r1"), "hook", "claude-code", "--remote-approve", "--approve-wait", "20s")
	}()
	var reqs []struct{ ID, Session string }
	eventually(t, stateTimeout, "n1 lists s0's open request", func() (bool, string) {
		mustJSON(t, n1.ok("agents", "pending", "--json"), &reqs)
		return len(reqs) == 1 && reqs[0].Session == sid, n1.ok("agents", "pending")
	})
	if r := n1.harn("", "agents", "approve", reqs[0].ID); r.code != 16 {
		t.Fatalf("an answer from a node the policy does not name: %v; want exit 16", r)
	}
	if st := s0.status(sid); st.Activity != "needs_input" {
		t.Fatalf("the refused answer moved the session to %s", st.Activity)
	}
	if n := countType(s0.trace(sid), "interaction.input_resolved"); n != 0 {
		t.Fatalf("the refused answer was recorded (%d input_resolved)", n)
	}
	s0.ok("agents", "deny", reqs[0].ID, "--reason", "not now")
	if r := <-ch; !strings.Contains(r.stdout, `"behavior":"deny"`) {
		t.Fatalf("hook output: %v", r)
	}
	var resolved []eventJSON
	for _, e := range s0.trace(sid) {
		if e.Type == "interaction.input_resolved" {
			resolved = append(resolved, e)
		}
	}
	if len(resolved) != 1 || resolved[0].Attrs["decision"] != "deny" || !strings.Contains(resolved[0].Attrs["by"].(string), "s0") ||
		resolved[0].Attrs["reason"] != "not now" {
		t.Fatalf("the local deny: %+v", resolved)
	}
	if st := s0.status(sid); st.Activity != "working" {
		t.Fatalf("after the deny: %s", st.Activity)
	}
}

// An approval given within the needs_input debounce drops its pending
// notification: the next transition's message (blocked, declared after
// the approval) is the first and only one the webhook gets. Had the
// needs_input message still been armed, it would have fired before the
// blocked one (its debounce began earlier) and arrived first on the same
// queue, so the order proves it was never sent.
func TestApprovalWithinTheDebounceSendsNoNeedsInputWebhook(t *testing.T) {
	e := newEnv(t)
	e.startNode("--name", "solo", "--allow-private")
	e.waitLeader()
	srv := newHookServer(t, 0)
	e.addWebhook(srv.URL+"/harn", "--on", "needs_input,blocked")
	sid, cwd := "cc-answered-in-time", e.root
	e.hook("claude-code", claudeStart(sid, cwd))
	e.hook("claude-code", claudePrompt(sid, cwd))
	e.hook("claude-code", claudePreBash(sid, cwd, "w1"))
	asked := time.Now()
	ch := make(chan result, 1)
	go func() {
		ch <- run(t, e.hookEnv(), claudePermBash(sid, cwd, "w1"), "hook", "claude-code", "--remote-approve", "--approve-wait", "20s")
	}()
	var reqs []struct{ ID, Session string }
	eventually(t, stateTimeout, "the open request is listed", func() (bool, string) {
		mustJSON(t, e.ok("agents", "pending", "--json"), &reqs)
		return len(reqs) == 1 && reqs[0].Session == sid, e.ok("agents", "pending")
	})
	e.ok("agents", "approve", reqs[0].ID)
	if d := time.Since(asked); d >= 2500*time.Millisecond {
		t.Skipf("the approval came %v after the request, too close to the 3 s debounce on this machine to judge the rule", d)
	}
	if r := <-ch; !strings.Contains(r.stdout, `"behavior":"allow"`) {
		t.Fatalf("hook output: %v", r)
	}
	e.ok("agents", "lifecycle", "blocked", "--reason", "waits for the release window", "--session", sid)
	if kinds := srv.waitKinds(t, sid, "blocked"); strings.Join(kinds, ",") != "blocked" {
		t.Fatalf("kinds %v: a needs_input message went out after the approval", kinds)
	}
}
