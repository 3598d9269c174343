package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite cmd/*/depaware.txt from `go list -deps`")

// depawareEnv is the platform the lists are taken for: what a file's build
// constraint keeps depends on it, and make build's binaries are static.
var depawareEnv = []string{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0"}

// depawareHeader opens each cmd/<bin>/depaware.txt.
const depawareHeader = "# The packages %s links, standard library included: `go list -deps -tags '%s' ./cmd/%s`\n" +
	"# for linux/amd64 with CGO_ENABLED=0, sorted. TestDepaware fails when this list is stale;\n" +
	"# `make depaware` (go test -run TestDepaware . -update) rewrites it.\n"

// makeTags are the build tags make build gives each binary, read from the
// Makefile's build target: `-tags '...'` on the line that writes ./cmd/<bin>.
func makeTags(t *testing.T) map[string]string {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+)\s*\?=\s*(.*)$`).FindAllStringSubmatch(string(mk), -1) {
		vars[m[1]] = strings.TrimSpace(m[2])
	}
	body := string(mk)
	if i := strings.Index(body, "\nbuild:"); i >= 0 {
		body = body[i:]
		if j := strings.Index(body[1:], "\n\n"); j >= 0 {
			body = body[:j+1]
		}
	}
	tags := map[string]string{}
	line := regexp.MustCompile(`-o \$\(BINDIR\)/ \./cmd/([\w-]+)\s*$`)
	tagRe := regexp.MustCompile(`-tags '([^']*)'`)
	for _, l := range strings.Split(body, "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		tg := ""
		if tm := tagRe.FindStringSubmatch(l); tm != nil {
			tg = regexp.MustCompile(`\$\((\w+)\)`).ReplaceAllStringFunc(tm[1], func(v string) string {
				return vars[v[2:len(v)-1]]
			})
			tg = strings.Join(strings.Fields(tg), " ")
		}
		tags[m[1]] = tg
	}
	return tags
}

// TestDepaware: each binary's whole dependency list is checked in as
// cmd/<bin>/depaware.txt; a change to what a binary links fails here,
// with the diff, until the file is rewritten (and the change reviewed).
func TestDepaware(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the dependencies")
	}
	tags := makeTags(t)
	bins, _ := filepath.Glob("cmd/*/main.go")
	if len(bins) == 0 {
		t.Fatal("no cmd/*/main.go")
	}
	for _, m := range bins {
		bin := filepath.Base(filepath.Dir(m))
		tg, ok := tags[bin]
		if !ok {
			t.Errorf("the Makefile's build target does not build ./cmd/%s", bin)
			continue
		}
		cmd := exec.Command(goTool, "list", "-deps", "-tags", tg, "./cmd/"+bin)
		cmd.Env = append(os.Environ(), depawareEnv...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps ./cmd/%s: %v: %s", bin, err, stderr.String())
		}
		deps := strings.Fields(string(out))
		slices.Sort(deps)
		want := fmt.Sprintf(depawareHeader, bin, tg, bin) + strings.Join(deps, "\n") + "\n"
		path := filepath.Join("cmd", bin, "depaware.txt")
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v; write it with `make depaware`", path, err)
			continue
		}
		if d := lineDiff(string(got), want); d != "" {
			t.Errorf("%s is stale (- checked in, + linked now):\n%s\nReview the change, then rewrite it: make depaware (go test -run TestDepaware . -update)", path, d)
		}
	}
}

// lineDiff is the lines only in a (-) and only in b (+); "" when the two
// hold the same lines.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var d strings.Builder
	for _, l := range strings.Split(a, "\n") {
		if !mb[l] {
			d.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !ma[l] {
			d.WriteString("+ " + l + "\n")
		}
	}
	return d.String()
}
