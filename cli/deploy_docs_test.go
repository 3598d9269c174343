package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/harn-dev/harn/cli/hook"
)

// TestDeployConfigExamplesLoad: every config example in deploy/README.md
// (its ```json blocks) parses with the config loader, names only flags of
// `harn node`, and each value is one that flag takes; --bootstrap-expect
// goes with --server, as the node requires.
func TestDeployConfigExamplesLoad(t *testing.T) {
	b, err := os.ReadFile("../deploy/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```json":
			in, cur = true, nil
		case in && strings.TrimSpace(l) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, l)
		}
	}
	if len(blocks) < 3 {
		t.Fatalf("found %d config examples in deploy/README.md, want the three (servers, laptops)", len(blocks))
	}
	for i, blk := range blocks {
		vals, err := hook.ParseConfig([]byte(blk))
		if err != nil {
			t.Errorf("example %d: %v:\n%s", i+1, err, blk)
			continue
		}
		node := newNodeCmd()
		for k, v := range vals {
			f := node.Flags().Lookup(k)
			if f == nil {
				f = node.Flags().Lookup(strings.ReplaceAll(k, "_", "-"))
			}
			if f == nil {
				t.Errorf("example %d: %q is not a flag of harn node", i+1, k)
				continue
			}
			if err := hook.SetFlag(node, f, v); err != nil {
				t.Errorf("example %d: %s = %q: %v", i+1, k, v, err)
			}
		}
		if _, ok := vals["bootstrap-expect"]; ok && vals["server"] != "true" {
			t.Errorf("example %d: bootstrap-expect without server = true; the node refuses it", i+1)
		}
	}
}
