package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstructionsNameTheHooksBinaryWhenHarnIsOffPath: `harn hook
// install` run while `harn` on PATH is not this binary writes a CLAUDE.md
// block whose commands name the binary's absolute path, the one the hook
// would run; with this binary on PATH as `harn`, the block says a bare
// `harn`. The hook entries run harn-hook, beside harn: by its absolute path,
// or bare when PATH finds it too.
func TestInstructionsNameTheHooksBinaryWhenHarnIsOffPath(t *testing.T) {
	e := newEnv(t)
	onPath := filepath.Join(e.root, "bin")
	if err := os.MkdirAll(onPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(harnBin, filepath.Join(onPath, "harn")); err != nil {
		t.Fatal(err)
	}
	both := filepath.Join(e.root, "bin2")
	if err := os.MkdirAll(both, 0o755); err != nil {
		t.Fatal(err)
	}
	hookBin := filepath.Join(filepath.Dir(harnBin), "harn-hook")
	for _, n := range []string{"harn", "harn-hook"} {
		if err := os.Symlink(filepath.Join(filepath.Dir(harnBin), n), filepath.Join(both, n)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, path, want, wantHook string
	}{
		{"off PATH", "/usr/bin:/bin", harnBin, hookBin},
		{"on PATH", onPath + ":/usr/bin:/bin", "harn", hookBin},
		{"both on PATH", both + ":/usr/bin:/bin", "harn", "harn-hook"},
	} {
		home := filepath.Join(e.root, "home-"+strings.ReplaceAll(tc.name, " ", "-"))
		cfg := filepath.Join(home, ".claude")
		env := append(e.hookEnv(), "HOME="+home, "CLAUDE_CONFIG_DIR="+cfg, "PATH="+tc.path)
		if r := run(t, env, "", "hook", "install", "claude-code"); r.code != 0 {
			t.Fatalf("%s: %v", tc.name, r)
		}
		b, err := os.ReadFile(filepath.Join(cfg, "CLAUDE.md"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		md := string(b)
		for _, cmd := range []string{" agents set-task ", " agents lifecycle blocked ", " agents release-claim "} {
			if !strings.Contains(md, "`"+tc.want+cmd) {
				t.Errorf("%s: CLAUDE.md lacks `%s%s:\n%s", tc.name, tc.want, cmd, md)
			}
		}
		if tc.want != "harn" && strings.Contains(md, "`harn ") {
			t.Errorf("%s: CLAUDE.md tells the agent to run a bare harn:\n%s", tc.name, md)
		}
		settings, _ := os.ReadFile(filepath.Join(cfg, "settings.json"))
		if !strings.Contains(string(settings), `"`+tc.wantHook+" hook claude-code") {
			t.Errorf("%s: the hook command does not run %s:\n%s", tc.name, tc.wantHook, settings)
		}
	}
}
