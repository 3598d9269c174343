package codex

import (
	"testing"

	"github.com/harn-dev/harn/presence/adapter"
)

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{"PreToolUse": "pre_tool_use", "SessionStart": "session_start", "Stop": "stop", "UserPromptSubmit": "user_prompt_submit"} {
		if got := SnakeCase(in); got != want {
			t.Errorf("SnakeCase(%q) = %q", in, got)
		}
	}
}

// TestTrustRecordsByEitherPath: a record keyed by the settings file's
// canonical path counts; a disabled one is a finding.
func TestTrustRecordsByEitherPath(t *testing.T) {
	hs := []adapter.HookPlace{{Event: "PreToolUse"}, {Event: "Stop", Group: 1}}
	cfg := []byte("[hooks.state.\"/real/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:x\"\n[hooks.state]\n'/link/hooks.json:stop:1:0' = { trusted_hash = \"y\" }\n")
	a := hooks{}
	if c := a.CheckTrust(cfg, "/c/config.toml", []string{"/link/hooks.json", "/real/hooks.json"}, hs); !c.OK {
		t.Fatalf("both trusted: %+v", c)
	}
	if c := a.CheckTrust(cfg, "/c/config.toml", []string{"/link/hooks.json"}, hs); c.OK || c.Fix == "" {
		t.Fatalf("one untrusted: %+v", c)
	}
	off := append(cfg, "[hooks.state.\"/link/hooks.json:stop:1:0\"]\nenabled = false\n"...)
	if c := a.CheckTrust(off, "/c/config.toml", []string{"/link/hooks.json", "/real/hooks.json"}, hs); c.OK {
		t.Fatalf("disabled: %+v", c)
	}
	if got := a.TrustFile("/h", func(string) string { return "" }); got != "/h/.codex/config.toml" {
		t.Fatalf("TrustFile = %q", got)
	}
}

// FuzzHookStates: reading Codex's config.toml never panics.
func FuzzHookStates(f *testing.F) {
	f.Add([]byte("[hooks.state.\"/h/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:x\"\n[hooks.state]\n'k' = { trusted_hash = \"y\", enabled = false }\n"))
	f.Add([]byte("[hooks.state.\"unterminated\n\"=\n[[x]]"))
	f.Fuzz(func(t *testing.T, cfg []byte) {
		hookStates(cfg)
	})
}
