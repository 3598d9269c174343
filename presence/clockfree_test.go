package presence

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

// clockCalls are the package time's functions that read the clock or wait
// on it. The presence room (adapters included) is pure: time comes in as a
// value.
var clockCalls = map[string]bool{
	"Now": true, "Sleep": true, "After": true, "Tick": true, "NewTimer": true,
	"NewTicker": true, "Since": true, "Until": true, "AfterFunc": true,
}

// TestPresenceReadsNoClock parses every non-test Go file under presence/
// and fails on any use of a clock-reading function of package time, however
// the package is imported. With no clock, a fold is a function of its
// events: elapsed time can change nothing.
func TestPresenceReadsNoClock(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, name := range clockUses(f) {
			t.Errorf("%s: uses time.%s; presence reads no clock: pass the time in", fset.Position(name.Pos()), name.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("checked only %d files; is the walk rooted at presence/?", files)
	}
}

// clockUses returns the selectors of f that name a clock function of the
// package "time", under whatever name f imports it. A dot import of time
// is reported as a use of every clock function.
func clockUses(f *ast.File) []*ast.Ident {
	names := map[string]bool{}
	var out []*ast.Ident
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p != "time" {
			continue
		}
		switch {
		case im.Name == nil:
			names["time"] = true
		case im.Name.Name == ".":
			out = append(out, ast.NewIdent("(dot import)"))
		case im.Name.Name != "_":
			names[im.Name.Name] = true
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && names[id.Name] && clockCalls[sel.Sel.Name] {
			out = append(out, sel.Sel)
		}
		return true
	})
	return out
}

// The check finds what it must, under any import name.
func TestClockUsesFindsClockReads(t *testing.T) {
	for src, want := range map[string]int{
		"package p\nimport \"time\"\nvar _ = time.Now()":                                              1,
		"package p\nimport clock \"time\"\nfunc f() { clock.Sleep(1); _ = clock.Since }":              2,
		"package p\nimport \"time\"\nvar _ = time.Duration(1); var _ time.Time":                       0,
		"package p\nimport . \"time\"\nvar _ = Now()":                                                 1,
		"package p\nimport \"time\"\nfunc f() { <-time.After(1); time.NewTicker(1) }":                 2,
		"package p\ntype t struct{}\nfunc (t) Now() int { return 0 }\nvar time t\nvar _ = time.Now()": 0,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(clockUses(f)); got != want {
			t.Errorf("%q: %d uses, want %d", src, got, want)
		}
	}
}
