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
// command runs; with this binary on PATH as `harn`, the block says a bare
// `harn`, like the hook command.
func TestInstructionsNameTheHooksBinaryWhenHarnIsOffPath(t *testing.T) {
	e := newEnv(t)
	onPath := filepath.Join(e.root, "bin")
	if err := os.MkdirAll(onPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(harnBin, filepath.Join(onPath, "harn")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"off PATH", "/usr/bin:/bin", harnBin},
		{"on PATH", onPath + ":/usr/bin:/bin", "harn"},
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
		if !strings.Contains(string(settings), tc.want+" hook claude-code") {
			t.Errorf("%s: the hook command does not run %s:\n%s", tc.name, tc.want, settings)
		}
	}
}
