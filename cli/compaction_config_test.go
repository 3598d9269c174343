package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harn-dev/harn/cli/hook"
)

// TestNodeConfigCompactionEnabled: `compaction.enabled = false` in the
// node's config file (and HARN_COMPACTION_ENABLED) sets the node's
// default; a flag on the command line still wins.
func TestNodeConfigCompactionEnabled(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(cfg, []byte("# harn node\ncompaction.enabled = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want bool
	}{
		{"default", nil, "", true},
		{"config file", []string{"--config", cfg}, "", false},
		{"flag over the file", []string{"--config", cfg, "--compaction.enabled=true"}, "", true},
		{"environment", nil, "false", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv(hook.EnvName("compaction.enabled"), tc.env)
			}
			c := newNodeCmd()
			if err := c.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := hook.ApplySettings(c); err != nil {
				t.Fatal(err)
			}
			if got, _ := c.Flags().GetBool("compaction.enabled"); got != tc.want {
				t.Fatalf("compaction.enabled = %v, want %v", got, tc.want)
			}
		})
	}
	if hook.EnvName("compaction.enabled") != "HARN_COMPACTION_ENABLED" {
		t.Fatal(hook.EnvName("compaction.enabled"))
	}
}

// TestAskCompactionOverridesTheNode: harn ask sends a compaction choice
// only when --compaction is given, so that the node's compaction.enabled
// holds otherwise.
func TestAskCompactionOverridesTheNode(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		off, force bool
	}{
		{nil, false, false},
		{[]string{"--compaction=false"}, true, false},
		{[]string{"--compaction"}, false, true},
	} {
		c := newAskCmd()
		if err := c.ParseFlags(append([]string{"--model", "m"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		o, err := harnOptions(c)
		if err != nil {
			t.Fatal(err)
		}
		if o.NoCompaction != tc.off || o.Compaction != tc.force {
			t.Fatalf("%v: no_compaction %v compaction %v, want %v %v", tc.args, o.NoCompaction, o.Compaction, tc.off, tc.force)
		}
	}
}
