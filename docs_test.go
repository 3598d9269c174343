package main

import (
	"fmt"
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

// readmeMax is the README's budget: a newcomer reads it in five minutes.
const readmeMax = 15000

// TestReadmeIsShortAndLinksEachGuide: README.md is at most readmeMax
// bytes, links every guide in docs/, and each image it shows is in the
// tree and small (under 150 KB).
func TestReadmeIsShortAndLinksEachGuide(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > readmeMax {
		t.Errorf("README.md is %d bytes; keep it at most %d (move the rest into a guide in docs/)", len(b), readmeMax)
	}
	linked := map[string]bool{}
	for _, l := range mdLinks(string(b)) {
		linked[filepath.Clean(l.path)] = true
		if l.image {
			fi, err := os.Stat(l.path)
			if err != nil {
				t.Errorf("README.md shows %s: %v", l.path, err)
			} else if fi.Size() > 150<<10 {
				t.Errorf("README.md shows %s, %d bytes: keep an image under 150 KB", l.path, fi.Size())
			}
		}
	}
	guides, _ := filepath.Glob("docs/*.md")
	if len(guides) < 8 {
		t.Fatalf("only %d guides in docs/", len(guides))
	}
	for _, g := range guides {
		if !linked[g] {
			t.Errorf("README.md does not link the guide %s", g)
		}
	}
}

// TestDocLinksResolve: every relative link in README.md and docs/*.md
// (outside code) names a file of the tree and, with #anchor, a heading of
// that file (GitHub's anchors).
func TestDocLinksResolve(t *testing.T) {
	files, _ := filepath.Glob("docs/*.md")
	files = append(files, "README.md", "deploy/README.md")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range mdLinks(string(b)) {
			n++
			target := f
			if l.path != "" {
				target = filepath.Join(filepath.Dir(f), l.path)
			}
			tb, err := os.ReadFile(target)
			if err != nil {
				if fi, serr := os.Stat(target); serr == nil && fi.IsDir() && l.anchor == "" {
					continue
				}
				t.Errorf("%s: the link %q: %v", f, l.raw, err)
				continue
			}
			if l.anchor != "" && !mdAnchors(string(tb))[l.anchor] {
				t.Errorf("%s: the link %q: %s has no heading with the anchor #%s", f, l.raw, target, l.anchor)
			}
		}
	}
	if n < 30 {
		t.Fatalf("found only %d relative links; the link reader is broken", n)
	}
}

// TestCIRunsTheReadmeTestCommand: the command README's "Test" section
// gives is a line of .ci/run, exactly: CI runs what a newcomer is told
// to run.
func TestCIRunsTheReadmeTestCommand(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Test\n")
	if !ok {
		t.Fatal("README.md has no \"## Test\" section")
	}
	_, block, ok := strings.Cut(sec, "```sh\n")
	if !ok {
		t.Fatal("README.md's Test section has no ```sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	cmd := strings.TrimSpace(block)
	if cmd == "" || strings.Contains(cmd, "\n") {
		t.Fatalf("README.md's test command is %q: want one line", cmd)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(ci), "\n") {
		if strings.TrimSpace(l) == cmd {
			return
		}
	}
	t.Errorf(".ci/run does not run README's test command %q", cmd)
}

// mdLink is a relative link of a markdown file.
type mdLink struct {
	raw, path, anchor string
	image             bool
}

var mdLinkRe = regexp.MustCompile(`(!?)\[[^\]]*\]\(([^)\s]+)\)`)

// mdLinks are the relative links of markdown text, outside code fences
// and inline code.
func mdLinks(s string) []mdLink {
	var out []mdLink
	fence := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range mdLinkRe.FindAllStringSubmatch(line, -1) {
			u := m[2]
			if strings.Contains(u, "://") || strings.HasPrefix(u, "mailto:") {
				continue
			}
			p, a, _ := strings.Cut(u, "#")
			out = append(out, mdLink{raw: u, path: p, anchor: a, image: m[1] == "!"})
		}
	}
	return out
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	headingRe  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	anchorDrop = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// mdAnchors are the anchors GitHub gives the headings of markdown text:
// lower case, punctuation dropped, spaces as dashes, a repeat numbered.
func mdAnchors(s string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		m := headingRe.FindStringSubmatch(line)
		if fence || m == nil {
			continue
		}
		a := strings.ToLower(anchorDrop.ReplaceAllString(m[2], ""))
		a = strings.ReplaceAll(a, " ", "-")
		if k := seen[a]; k > 0 {
			out[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
