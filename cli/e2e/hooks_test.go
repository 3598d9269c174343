package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestHooksAllFourAgentsEndToEnd drives each agent's native hook sequence
// through real `harn hook` processes against a real node and checks,
// after every step, the session's two axes (`agents status --json`) and
// its heartbeat file; after the session ends, that it left the live
// roster but not history (`list --all`, `show`, `trace`).
func TestHooksAllFourAgentsEndToEnd(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	if fi, err := os.Stat(e.socket); err != nil {
		t.Fatal(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("the node's socket has mode %v; want 0600", fi.Mode().Perm())
	}

	// Heartbeat keys seen missing, for the known-gap check at the end.
	missing := map[string]bool{}

	agents := []struct {
		agent, sid string
		steps      func(sid, cwd string) []step
	}{
		{"claude-code", "8a1f0c2e-5b7d-4e21-9c3a-0d6e2f4b1a77", claudeSteps},
		{"codex", "019a3c4e-7f21-7b40-9d1e-5c2a8e0f6b13", codexSteps},
		{"cursor", "c0a8f5e2-41d7-4b9e-a3f0-7d2e91b6c845", cursorSteps},
		{"gemini", "9f1c2b7e-3d4a-4e5f-8a6b-7c8d9e0f1a2b", geminiSteps},
	}

	for _, a := range agents {
		t.Run(a.agent, func(t *testing.T) {
			defer e.use(t)()
			var wantTypes []string
			for _, s := range a.steps(a.sid, cwd) {
				r := e.hook(a.agent, s.payload(), s.args...)
				checkHookStdout(t, a.agent, s.name, r.stdout)
				wantTypes = append(wantTypes, s.types...)

				st := e.status(a.sid)
				if st.Activity != s.activity || st.ActivitySource != s.source {
					t.Fatalf("after %s: activity %q from %q, want %q from %q", s.name, st.Activity, st.ActivitySource, s.activity, s.source)
				}
				if st.TaskState != "active" || st.Ended != s.ended {
					t.Fatalf("after %s: task_state %q ended %v; want active, ended %v", s.name, st.TaskState, st.Ended, s.ended)
				}
				if st.ActivityUpdatedAt == "" {
					t.Fatalf("after %s: status has no activity_updated_at", s.name)
				}
				if s.ended {
					eventually(t, stateTimeout, "heartbeat removed after "+s.name, func() (bool, string) {
						_, err := os.Stat(e.heartbeatPath(a.sid))
						return errors.Is(err, os.ErrNotExist), "file still there"
					})
					continue
				}
				hb := e.waitHeartbeat(a.sid, s.activity, s.source)
				for _, k := range []string{"activity", "activity_updated_at", "activity_source", "task_state"} {
					if v, _ := hb[k].(string); v == "" {
						t.Fatalf("after %s: heartbeat lacks %q: %v", s.name, k, hb)
					}
				}
				if _, ok := hb["task_state_updated_at"]; !ok {
					missing["task_state_updated_at"] = true
				}
			}

			if inList(e.list(false), a.sid) {
				t.Errorf("ended session %s is still in `agents list`", a.sid)
			}
			if !inList(e.list(true), a.sid) {
				t.Errorf("ended session %s is missing from `agents list --all`", a.sid)
			}
			sh := e.show(a.sid)
			if !sh.Ended || sh.Agent != a.agent || sh.Activity != "idle" || sh.EndReason == "" {
				t.Errorf("show: ended %v agent %q activity %q end_reason %q", sh.Ended, sh.Agent, sh.Activity, sh.EndReason)
			}
			evs := e.trace(a.sid)
			if got := types(evs); !reflect.DeepEqual(got, wantTypes) {
				t.Fatalf("trace types\n got %v\nwant %v", got, wantTypes)
			}
			checkTraceOrder(t, evs)
			// Raw prompts, tool input and output never enter the ledger.
			raw := e.ok("agents", "trace", a.sid, "--json")
			for _, secret := range []string{"rounding", "rm -rf build", "git push origin", "npm test", "12 passing", "Done:", "All tests pass"} {
				if strings.Contains(raw, secret) {
					t.Errorf("the trace carries raw content %q", secret)
				}
			}
			for _, ev := range evs {
				if ev.Agent != a.agent || ev.SessionID != a.sid || ev.Node == "" {
					t.Errorf("event %s: agent %q session %q node %q", ev.ID, ev.Agent, ev.SessionID, ev.Node)
				}
			}
		})
	}

	t.Run("codex-notify", func(t *testing.T) {
		defer e.use(t)()
		thread := "019a3c4e-0000-7b40-9d1e-notifythread"
		e.hook("codex", codexPrompt(thread, cwd))
		if st := e.status(thread); st.Activity != "working" {
			t.Fatalf("after UserPromptSubmit: activity %q", st.Activity)
		}
		// The JSON is the last argv argument; stdin is not read.
		r := e.hook("codex-notify", "", codexNotify(thread, cwd))
		if r.stdout != "" {
			t.Errorf("codex-notify printed %q", r.stdout)
		}
		st := e.status(thread)
		if st.Activity != "idle" || st.ActivitySource != "turn.stop" || st.Ended {
			t.Fatalf("after notify: activity %q from %q, ended %v", st.Activity, st.ActivitySource, st.Ended)
		}
		evs := e.trace(thread)
		if got := types(evs); !reflect.DeepEqual(got, []string{"user_prompt.submit", "turn.stop"}) {
			t.Fatalf("trace types %v", got)
		}
		if evs[1].Agent != "codex" {
			t.Errorf("notify event agent %q, want codex", evs[1].Agent)
		}
	})

	t.Run("claude prompt-time peer context", func(t *testing.T) {
		defer e.use(t)()
		peer, me := "peer-7e1d2c3b", "me-4f5a6b7c"
		e.hook("claude-code", claudeStart(peer, cwd))
		e.hook("claude-code", claudeStart(me, cwd))
		peerName := e.status(peer).Name

		ctx := additionalContext(t, e.hook("claude-code", claudePrompt(me, cwd)).stdout)
		if !strings.Contains(ctx, "Agent "+peerName) || strings.Contains(ctx, "Agent "+e.status(me).Name+" ") {
			t.Fatalf("first prompt: context should list the peer %q and not the session itself:\n%s", peerName, ctx)
		}
		if out := e.hook("claude-code", claudePrompt(me, cwd)).stdout; out != "" {
			t.Fatalf("second prompt with nothing changed printed %q", out)
		}
		// The peer starts working: its row changed, so the next prompt
		// sees the table again, once.
		e.hook("claude-code", claudePrompt(peer, cwd))
		ctx = additionalContext(t, e.hook("claude-code", claudePrompt(me, cwd)).stdout)
		if !strings.Contains(ctx, "Agent "+peerName) || !strings.Contains(ctx, "working") {
			t.Fatalf("after the peer changed: context should show it working:\n%s", ctx)
		}
		if out := e.hook("claude-code", claudePrompt(me, cwd)).stdout; out != "" {
			t.Fatalf("prompt after an unchanged table printed %q", out)
		}
	})

	t.Run("heartbeat carries task_state_updated_at before any lifecycle event", func(t *testing.T) {
		if missing["task_state_updated_at"] {
			t.Fatal("heartbeat omits task_state_updated_at before the first lifecycle event")
		}
	})
}

// waitHeartbeat waits until the heartbeat file shows activity from source
// and returns it decoded.
func (e *env) waitHeartbeat(id, activity, source string) map[string]any {
	e.t.Helper()
	var hb map[string]any
	eventually(e.t, stateTimeout, "heartbeat of "+id+" shows "+activity, func() (bool, string) {
		b, err := os.ReadFile(e.heartbeatPath(id))
		if err != nil {
			return false, err.Error()
		}
		hb = nil
		if err := json.Unmarshal(b, &hb); err != nil {
			return false, err.Error()
		}
		return hb["activity"] == activity && hb["activity_source"] == source, string(b)
	})
	return hb
}

// checkHookStdout: a hook prints nothing, or one JSON object its agent
// reads; Claude Code prints only on UserPromptSubmit.
func checkHookStdout(t *testing.T, agent, step, out string) {
	t.Helper()
	if out == "" {
		return
	}
	if agent == "claude-code" && step != "UserPromptSubmit" {
		t.Errorf("%s %s printed %q; want nothing", agent, step, out)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Errorf("%s %s printed non-JSON %q", agent, step, out)
	}
}

// additionalContext decodes Claude's UserPromptSubmit output.
func additionalContext(t *testing.T, out string) string {
	t.Helper()
	var v struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("UserPromptSubmit output %q: %v", out, err)
	}
	h := v.HookSpecificOutput
	if h.HookEventName != "UserPromptSubmit" || h.AdditionalContext == "" {
		t.Fatalf("UserPromptSubmit output %q lacks hookSpecificOutput.additionalContext", out)
	}
	return h.AdditionalContext
}

// checkTraceOrder: trace is in (ts, id) order, ids are unique, and seq
// (append order) increases with it when events were sent one by one.
func checkTraceOrder(t *testing.T, evs []eventJSON) {
	t.Helper()
	seen := map[string]bool{}
	for i, ev := range evs {
		if seen[ev.ID] {
			t.Errorf("event id %s appears twice", ev.ID)
		}
		seen[ev.ID] = true
		if i == 0 {
			continue
		}
		p := evs[i-1]
		ts, pts := parseTS(t, ev.TS), parseTS(t, p.TS)
		if ts.Before(pts) || (ts.Equal(pts) && ev.ID < p.ID) {
			t.Errorf("trace out of (ts, id) order at %d: %s/%s after %s/%s", i, ev.TS, ev.ID, p.TS, p.ID)
		}
		if ev.Seq <= p.Seq {
			t.Errorf("seq %d after %d at %d: append order differs from event order", ev.Seq, p.Seq, i)
		}
	}
}

// TestMalformedHookInputIsDiagnostic: bad input never fails the agent
// (exit 0, nothing on stdout) and becomes one diagnostic each in `harn
// node errors`, without the raw input.
func TestMalformedHookInputIsDiagnostic(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	const secret = "SECRET-PAYLOAD-7731"
	cases := []struct {
		name, agent, stdin, source, msg string
	}{
		{"garbage stdin", "claude-code", "this is not json " + secret, "hook claude-code", "not a JSON object"},
		{"empty stdin", "codex", "", "hook codex", "empty"},
		{"a JSON array", "cursor", `["` + secret + `",{"hook_event_name":"stop"}]`, "hook cursor", "not a JSON object"},
		{"no session id", "gemini", `{"hook_event_name":"AfterAgent","timestamp":"2026-08-12T10:03:04.000Z","prompt":"` + secret + `"}`, "hook gemini", "session_id is missing"},
		{"unknown agent", "frobnicator", `{"session_id":"s1","hook_event_name":"Stop"}`, "hook frobnicator", "unknown agent"},
		// An event name harn does not know is a diagnostic, not a session.
		{"unknown event name", "claude-code", `{"session_id":"ghost-1","hook_event_name":"TeammateIdle","cwd":"/tmp"}`, "hook claude-code", "unknown hook event"},
		// Oversized input is refused, not truncated into an event.
		{"oversized payload", "claude-code", `{"session_id":"big-1","hook_event_name":"UserPromptSubmit","prompt":"` +
			strings.Repeat("x", 4<<20) + `"}`, "hook claude-code", "at most"},
	}
	for _, c := range cases {
		r := e.harn(c.stdin, "hook", c.agent)
		if r.code != 0 || r.stdout != "" {
			t.Errorf("%s: exit %d stdout %q; want exit 0 and no stdout", c.name, r.code, r.stdout)
		}
	}
	out := e.ok("node", "errors", "--json")
	if strings.Contains(out, secret) {
		t.Errorf("a diagnostic carries raw hook input:\n%s", out)
	}
	if inList(e.list(true), "ghost-1") {
		t.Errorf("an unknown hook event made a session")
	}
	var ds []struct {
		Seq         uint64 `json:"seq"`
		TS          string `json:"ts"`
		Source      string `json:"source"`
		Error       string `json:"error"`
		InputBytes  int    `json:"input_bytes"`
		InputDigest string `json:"input_digest"`
	}
	mustJSON(t, out, &ds)
	if len(ds) != len(cases) {
		t.Fatalf("want %d diagnostics, got %d:\n%s", len(cases), len(ds), out)
	}
	for _, c := range cases {
		found := 0
		for _, d := range ds {
			if d.Source != c.source || !strings.Contains(d.Error, c.msg) {
				continue
			}
			found++
			if d.TS == "" || d.Seq == 0 {
				t.Errorf("%s: diagnostic without ts or seq: %+v", c.name, d)
			}
			if c.agent == "frobnicator" {
				continue // stdin is not read for an agent harn does not know
			}
			if d.InputBytes == 0 && c.stdin != "" || d.InputBytes > len(c.stdin) {
				t.Errorf("%s: input_bytes %d for %d bytes of input", c.name, d.InputBytes, len(c.stdin))
			}
			if c.stdin != "" && d.InputDigest == "" {
				t.Errorf("%s: no input digest", c.name)
			}
		}
		if found != 1 {
			t.Errorf("%s: %d diagnostics from %q saying %q in\n%s", c.name, found, c.source, c.msg, out)
		}
	}
	if ss := e.list(true); len(ss) != 0 {
		t.Errorf("bad input made sessions: %+v", ss)
	}

	// Bad settings are not the agent's fault either: Claude Code and
	// Codex read exit 2 as "block this action", Cursor as "deny", so a
	// broken config file, a bad HARN_* value or a flag this harn does not
	// know must still exit 0 and print nothing on stdout.
	t.Run("bad settings never fail the agent", func(t *testing.T) {
		defer e.use(t)()
		payload := claudePreBash("settings-4e21", t.TempDir(), "s1")
		cfgDir := filepath.Join(e.root, "xdg-config", "harn")
		if err := os.MkdirAll(cfgDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		badCfg := run(t, e.hookEnv(), payload, "hook", "claude-code")
		if err := os.Remove(filepath.Join(cfgDir, "config.json")); err != nil {
			t.Fatal(err)
		}
		badEnv := run(t, append(e.hookEnv(), "HARN_TIMEOUT=soon"), payload, "hook", "claude-code")
		badFlag := run(t, e.hookEnv(), payload, "hook", "claude-code", "--from-a-newer-harn")
		for _, r := range []result{badCfg, badEnv, badFlag} {
			if r.code != 0 || r.stdout != "" {
				t.Errorf("want exit 0 and no stdout: %v", r)
			}
		}
	})
}

// TestNonUTF8SessionIDIsRefusedAsDocumented: a hook payload whose
// session_id is not valid UTF-8 (raw bytes, or an escaped lone surrogate)
// is refused with a diagnostic naming the field, not rewritten to U+FFFD;
// the hook still exits 0 and prints nothing.
func TestNonUTF8SessionIDIsRefusedAsDocumented(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	for _, sid := range []string{"s-\xff\xfe-bad", `s-\udc80-bad`} {
		payload := `{"session_id":"` + sid + `","cwd":"` + cwd + `","hook_event_name":"SessionStart","source":"startup"}`
		if r := e.hook("claude-code", payload); r.stdout != "" {
			t.Fatalf("hook printed %q", r.stdout)
		}
	}
	out := e.ok("node", "errors", "--json")
	var ds []struct {
		Source string `json:"source"`
		Error  string `json:"error"`
	}
	mustJSON(t, out, &ds)
	n := 0
	for _, d := range ds {
		if d.Source == "hook claude-code" && strings.Contains(d.Error, "session_id is not valid UTF-8") {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d diagnostics name the bad session_id, want 2:\n%s", n, out)
	}
	for _, s := range e.list(true) {
		if strings.ContainsRune(s.SessionID, '\uFFFD') || strings.Contains(s.SessionID, "bad") {
			t.Fatalf("the bad id was stored as %q", s.SessionID)
		}
	}
}
