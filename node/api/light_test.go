package api

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTheContractImportsNothingHeavy: node/api (and its helpers) import
// the standard library, gRPC, protobuf and presence (the pure reducer the
// roster row converts from) only, so that a client links the contract
// without the daemon.
func TestTheContractImportsNothingHeavy(t *testing.T) {
	allowed := []string{"google.golang.org/grpc", "google.golang.org/protobuf", "google.golang.org/genproto/googleapis/rpc",
		"github.com/harn-dev/harn/presence", "github.com/harn-dev/harn/node/api/hookwire"}
	for _, dir := range []string{".", "wiretest"} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				ok := !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") // the standard library
				for _, a := range allowed {
					ok = ok || p == a || strings.HasPrefix(p, a+"/")
				}
				if !ok {
					t.Errorf("%s imports %s", filepath.Join(dir, e.Name()), p)
				}
			}
		}
	}
}

// TestHookwireImportsTheStandardLibraryAndPresence: node/api/hookwire, the
// hook's round trip, imports the standard library and presence only (no
// protobuf runtime, no gRPC), so that harn-hook starts as a small program.
func TestHookwireImportsTheStandardLibraryAndPresence(t *testing.T) {
	ents, err := os.ReadDir("hookwire")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("hookwire", e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") && p != "github.com/harn-dev/harn/presence" {
				t.Errorf("hookwire/%s imports %s", e.Name(), p)
			}
		}
	}
}
