package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var tableRule = regexp.MustCompile(`^\|( *:?-+:? *\|)+ *$`)

// TestMarkdownTablesAreWhole: a table row that starts a block (after a
// blank line or a paragraph) must be a header followed by its rule line;
// otherwise a blank line has cut a table in two and the rest renders as
// text.
func TestMarkdownTablesAreWhole(t *testing.T) {
	files, _ := filepath.Glob("docs/*.md")
	files = append(files, "README.md", "deploy/README.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		fence := false
		for i, l := range lines {
			if strings.HasPrefix(l, "```") {
				fence = !fence
			}
			if fence || !strings.HasPrefix(l, "|") {
				continue
			}
			if i > 0 && strings.HasPrefix(lines[i-1], "|") {
				continue
			}
			if i+1 >= len(lines) || !tableRule.MatchString(strings.TrimSpace(lines[i+1])) {
				t.Errorf("%s:%d: a table row with no header before it (a blank line cut the table?)", f, i+1)
			}
		}
	}
}
