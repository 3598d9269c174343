package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hookTimeouts reads the timeout of harn's entry for each event of a
// Claude-shaped (or, flat, Cursor's) settings file.
func hookTimeouts(t *testing.T, path string, flat bool) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err = stripComments(b)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Hooks map[string][]json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	type handler struct {
		Command string   `json:"command"`
		Timeout *float64 `json:"timeout"`
	}
	out := map[string]float64{}
	for ev, list := range f.Hooks {
		for _, item := range list {
			var hs []handler
			if flat {
				var h handler
				_ = json.Unmarshal(item, &h)
				hs = []handler{h}
			} else {
				var g struct {
					Hooks []handler `json:"hooks"`
				}
				_ = json.Unmarshal(item, &g)
				hs = g.Hooks
			}
			for _, h := range hs {
				if strings.Contains(h.Command, " hook ") {
					out[ev] = -1
					if h.Timeout != nil {
						out[ev] = *h.Timeout
					}
				}
			}
		}
	}
	return out
}

// TestHookTimeoutCoversTheApproveWait: `--remote-approve --approve-wait
// 2m` into CLAUDE_CONFIG_DIR writes the PermissionRequest and PreToolUse
// entries (the hooks that wait: a remote approval, a confirmation) with a
// timeout of the wait plus the margin, in seconds; the others keep 10.
func TestHookTimeoutCoversTheApproveWait(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "claude-cfg")
	o := Options{Agent: "claude-code", Scope: ScopeUser, Home: t.TempDir(), Command: bin,
		Getenv:        func(k string) string { return map[string]string{"CLAUDE_CONFIG_DIR": cfg}[k] },
		RemoteApprove: true, ApproveWait: 2 * time.Minute}
	r, err := Install(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != filepath.Join(cfg, "settings.json") {
		t.Fatalf("installed into %s, not CLAUDE_CONFIG_DIR", r.Path)
	}
	got := hookTimeouts(t, r.Path, false)
	for _, ev := range []string{"PermissionRequest", "PreToolUse"} {
		if got[ev] < 130 {
			t.Errorf("%s timeout %v; want at least 130 (2m plus a margin)", ev, got[ev])
		}
	}
	if got["Stop"] != 10 || got["SessionStart"] != 10 {
		t.Errorf("hooks that never wait: %v; want 10", got)
	}
	st, err := Inspect(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range st.Hooks {
		if h.TooShort() {
			t.Errorf("Inspect calls harn's own %s entry too short: %+v", h.Event, h)
		}
	}
	// Without --remote-approve the PermissionRequest hook does not wait,
	// and PreToolUse's confirmation wait is the hook's default.
	plain := o
	plain.RemoteApprove, plain.ApproveWait = false, 0
	if _, err := Install(plain); err != nil {
		t.Fatal(err)
	}
	got = hookTimeouts(t, r.Path, false)
	if want := (DefaultWait + TimeoutMargin).Seconds(); got["PreToolUse"] != want || got["PermissionRequest"] != 10 {
		t.Errorf("plain install: PreToolUse %v (want %v), PermissionRequest %v (want 10)", got["PreToolUse"], want, got["PermissionRequest"])
	}
}

// TestHookTimeoutInEachAgentsUnit: Gemini's timeout is in milliseconds,
// Codex's and Cursor's in seconds; each agent's waiting entries cover the
// hook's wait.
func TestHookTimeoutInEachAgentsUnit(t *testing.T) {
	want := DefaultWait + TimeoutMargin
	for _, c := range []struct {
		agent, event string
		flat         bool
		value        float64
	}{
		{"codex", "PermissionRequest", false, want.Seconds()},
		{"codex", "PreToolUse", false, want.Seconds()},
		{"gemini", "BeforeTool", false, float64(want.Milliseconds())},
		{"cursor", "beforeShellExecution", true, want.Seconds()},
		{"cursor", "preToolUse", true, want.Seconds()},
	} {
		o := Options{Agent: c.agent, Scope: ScopeUser, Home: t.TempDir(), Command: bin}
		r, err := Install(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := hookTimeouts(t, r.Path, c.flat)[c.event]; got != c.value {
			t.Errorf("%s %s: timeout %v; want %v", c.agent, c.event, got, c.value)
		}
	}
}

// TestReinstallRaisesAShortTimeout: an entry harn wrote with the old fixed
// 10 s is stale under a 2m wait; Inspect says so, and install rewrites it.
func TestReinstallRaisesAShortTimeout(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".claude", "settings.json")
	cmd := bin + " hook claude-code --remote-approve --approve-wait 2m0s"
	old := `{"hooks":{"PermissionRequest":[{"matcher":"*","hooks":[{"type":"command","command":"` + cmd + `","timeout":10}]}]}}`
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Agent: "claude-code", Scope: ScopeUser, Home: home, Command: bin, RemoteApprove: true, ApproveWait: 2 * time.Minute}
	st, err := Inspect(o)
	if err != nil || len(st.Hooks) != 1 {
		t.Fatalf("inspect: %+v, %v", st, err)
	}
	if h := st.Hooks[0]; !h.TooShort() || h.Timeout != 10*time.Second || h.Wait != 2*time.Minute || h.WantTimeout() < 130*time.Second {
		t.Fatalf("a 10 s timeout under a 2m wait: %+v", h)
	}
	r, err := Install(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Replaced) == 0 || r.Replaced[0] != "PermissionRequest" {
		t.Fatalf("the short entry was not replaced: %+v", r)
	}
	if got := hookTimeouts(t, path, false)["PermissionRequest"]; got < 130 {
		t.Fatalf("after reinstall: %v", got)
	}
}

func TestCommandWait(t *testing.T) {
	for cmd, want := range map[string]time.Duration{
		"harn hook claude-code": DefaultWait,
		"harn hook claude-code --remote-approve --approve-wait 2m0s": 2 * time.Minute,
		"harn hook codex --remote-approve --approve-wait=45s":        45 * time.Second,
		"harn hook codex --approve-wait bogus":                       DefaultWait,
	} {
		if got := CommandWait(cmd); got != want {
			t.Errorf("%q: %v; want %v", cmd, got, want)
		}
	}
}
