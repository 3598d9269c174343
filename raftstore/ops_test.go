package raftstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestOpsListsEveryOpConstant reads this package's source: every constant
// of type Op must be in Ops(), so that an op added later without a place
// in the list (and so without a write-authority rule) fails here.
func TestOpsListsEveryOpConstant(t *testing.T) {
	fset := token.NewFileSet()
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var found []Op
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Op" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s: an Op constant that is not a string literal", e.Name())
					}
					s, _ := strconv.Unquote(lit.Value)
					found = append(found, Op(s))
				}
			}
		}
	}
	if len(found) == 0 {
		t.Fatal("no Op constants found: the scan is broken")
	}
	for _, op := range found {
		if !slices.Contains(Ops(), op) {
			t.Errorf("op %q is defined but not in Ops()", op)
		}
	}
	if len(found) != len(Ops()) {
		t.Errorf("source defines %d ops, Ops() lists %d: %v vs %v", len(found), len(Ops()), found, Ops())
	}
	// Every listed op is one Validate knows.
	for _, op := range Ops() {
		err := Command{Op: op}.Validate()
		if err != nil && strings.Contains(err.Error(), "unknown op") {
			t.Errorf("Validate does not know %q", op)
		}
	}
}
