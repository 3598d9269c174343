package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/harn-dev/harn/"

// allowed says, for each top-level folder, which of the module's folders
// and which outside modules its non-test code may import (DESIGN.md, "The
// house"). The standard library is always allowed. Arrows point down the
// table, never up.
var allowed = map[string]struct {
	inner []string
	outer []string
}{
	"presence": {inner: []string{"presence"}},
	"util":     {inner: []string{"util"}, outer: []string{"golang.org/x/sys", "github.com/oklog/ulid"}},
	"runtime":  {inner: []string{"runtime", "presence", "util"}},
	// runtime/agent: harn's own agent loop speaks to model APIs.
	"runtime/agent": {inner: []string{"runtime", "presence", "util"}, outer: []string{"github.com/openai/openai-go/v3", "github.com/anthropics/anthropic-sdk-go/v2", "github.com/tiktoken-go/tokenizer"}},
	"mesh":          {inner: []string{"mesh", "util"}, outer: []string{"github.com/hashicorp/memberlist"}},
	"raftstore":     {inner: []string{"raftstore", "presence", "util"}, outer: []string{"github.com/hashicorp/raft", "github.com/hashicorp/raft-boltdb", "github.com/hashicorp/go-hclog", "go.etcd.io/bbolt", "google.golang.org/grpc", "google.golang.org/protobuf"}},
	"node":          {inner: []string{"node", "presence", "runtime", "mesh", "raftstore", "util"}, outer: []string{"*"}},
	"cli":           {inner: []string{"cli", "node", "presence", "util"}, outer: []string{"*"}},
	"deploy":        {},
	// internal/testsupport: shared test helpers, imported by _test.go files only.
	"internal": {inner: []string{"internal"}, outer: []string{"github.com/anishathalye/porcupine"}},
}

func TestImportDirection(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		top := strings.SplitN(filepath.ToSlash(path), "/", 2)[0]
		if !strings.Contains(filepath.ToSlash(path), "/") {
			return nil // main.go: calls cli only
		}
		rule, ok := allowed[top]
		if parts := strings.SplitN(filepath.ToSlash(path), "/", 3); len(parts) == 3 {
			if sub, found := allowed[parts[0]+"/"+parts[1]]; found { // a folder with its own line
				rule, ok = sub, true
			}
		}
		if !ok {
			t.Errorf("%s: top-level folder %q is not in DESIGN.md's table", path, top)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !importOK(p, rule.inner, rule.outer) {
				t.Errorf("%s imports %s, against the direction in DESIGN.md", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func importOK(p string, inner, outer []string) bool {
	if rest, ok := strings.CutPrefix(p, module); ok {
		top := strings.SplitN(rest, "/", 2)[0]
		for _, a := range inner {
			if a == "*" || a == top {
				return true
			}
		}
		return false
	}
	first := strings.SplitN(p, "/", 2)[0]
	if !strings.Contains(first, ".") {
		return true // standard library
	}
	for _, a := range outer {
		if a == "*" || p == a || strings.HasPrefix(p, a+"/") {
			return true
		}
	}
	return false
}

func TestImportRuleCatchesUpwardImport(t *testing.T) {
	r := allowed["presence"]
	if importOK(module+"node", r.inner, r.outer) {
		t.Fatal("presence importing node must be refused")
	}
	if importOK("github.com/hashicorp/memberlist", r.inner, r.outer) {
		t.Fatal("presence importing memberlist must be refused")
	}
	if !importOK("encoding/json", r.inner, r.outer) {
		t.Fatal("stdlib must be allowed")
	}
}

// TestNodeRoomsDoNotImportNode: the rooms under node/ are wired by node,
// the composition root; none of them imports node (nor another's room
// through it).
func TestNodeRoomsDoNotImportNode(t *testing.T) {
	rooms, err := filepath.Glob("node/*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range rooms {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == module+"node" {
				t.Errorf("%s imports %s: a room must not import the composition root", path, p)
			}
		}
	}
}

// TestPresenceReadsNoClock: the reducer's "elapsed time changes nothing"
// holds by construction: presence never calls time.Now or time.Sleep.
func TestPresenceReadsNoClock(t *testing.T) {
	files, err := filepath.Glob("presence/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && (sel.Sel.Name == "Now" || sel.Sel.Name == "Sleep") {
				t.Errorf("%s: presence calls time.%s; take the time from the event", path, sel.Sel.Name)
			}
			return true
		})
	}
}

// TestTestsupportOnlyInTests: internal/testsupport (and porcupine with it)
// never reaches the binary: only _test.go files import it.
func TestTestsupportOnlyInTests(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.HasPrefix(filepath.ToSlash(path), "internal/testsupport/") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == module+"internal/testsupport" {
				t.Errorf("%s imports %s, which is for tests only", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
