package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstructionsInstalledFoundByDoctorAndRemoved: `harn hook install`
// writes the agent's instructions beside the user's own text, doctor finds
// them (and reports drift), and uninstall removes exactly harn's region.
func TestInstructionsInstalledFoundByDoctorAndRemoved(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	home := filepath.Join(e.root, "home")
	cfg := filepath.Join(e.root, "claude-cfg")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := "# My own rules\n\nNever push on Fridays.\n"
	claudeMD := filepath.Join(cfg, "CLAUDE.md")
	if err := os.WriteFile(claudeMD, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(e.hookEnv(), "HOME="+home, "CLAUDE_CONFIG_DIR="+cfg)

	dry := run(t, env, "", "hook", "install", "claude-code", "--dry-run")
	if dry.code != 0 || !strings.Contains(dry.stdout, "+<!-- harn:begin v1 -->") {
		t.Fatalf("dry run shows no diff: %v", dry)
	}
	if b, _ := os.ReadFile(claudeMD); string(b) != mine {
		t.Fatal("the dry run wrote")
	}
	if r := run(t, env, "", "hook", "install", "claude-code"); r.code != 0 {
		t.Fatalf("%v", r)
	}
	b, _ := os.ReadFile(claudeMD)
	if !strings.HasPrefix(string(b), mine) || !strings.Contains(string(b), "harn agents set-task") ||
		!strings.Contains(string(b), "lifecycle blocked --reason") {
		t.Fatalf("CLAUDE.md after install:\n%s", b)
	}
	r := run(t, env, "", "doctor")
	if !strings.Contains(r.stdout, "ok      instructions claude-code: v1 in "+claudeMD) {
		t.Fatalf("doctor does not find the instructions:\n%s", r.stdout)
	}
	// Drift: an older region is a finding with its fix.
	old := strings.Replace(string(b), "harn:begin v1", "harn:begin v0", 1)
	os.WriteFile(claudeMD, []byte(old), 0o644)
	r = run(t, env, "", "doctor")
	if r.code != 10 || !strings.Contains(r.stdout, "FINDING instructions claude-code: drift") ||
		!strings.Contains(r.stdout, "fix: harn hook install claude-code") {
		t.Fatalf("doctor misses the drift: %v", r)
	}
	if r := run(t, env, "", "hook", "uninstall", "claude-code"); r.code != 0 {
		t.Fatalf("%v", r)
	}
	if b, _ := os.ReadFile(claudeMD); string(b) != mine {
		t.Fatalf("uninstall touched the user's text:\n%q", b)
	}
}
