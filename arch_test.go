package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/harn-dev/harn/"

// allowed says, for each top-level folder, which of the module's folders
// and which outside modules its non-test code may import (docs/design.md,
// "The house"). The standard library is always allowed. Arrows point down the
// table, never up.
var allowed = map[string]struct {
	inner []string
	outer []string
}{
	"presence": {inner: []string{"presence"}},
	"util":     {inner: []string{"util"}, outer: []string{"golang.org/x/sys", "github.com/oklog/ulid"}},
	"runtime":  {inner: []string{"runtime", "presence", "util"}},
	// runtime/agent/tools speaks MCP through the official SDK and checks
	// MCP tools' arguments against their JSON schemas.
	"runtime/agent/tools": {inner: []string{"runtime", "presence", "util"}, outer: []string{"github.com/modelcontextprotocol/go-sdk", "github.com/google/jsonschema-go"}},
	// runtime/subagent validates children's handoffs against a JSON schema.
	"runtime/subagent": {inner: []string{"runtime", "presence", "util"}, outer: []string{"github.com/google/jsonschema-go"}},
	// runtime/agent: harn's own agent loop speaks to model APIs.
	"runtime/agent": {inner: []string{"runtime", "presence", "util"}, outer: []string{"github.com/openai/openai-go/v3", "github.com/anthropics/anthropic-sdk-go/v2", "github.com/tiktoken-go/tokenizer"}},
	"mesh":          {inner: []string{"mesh", "util"}, outer: []string{"github.com/hashicorp/memberlist"}},
	"raftstore":     {inner: []string{"raftstore", "presence", "util"}, outer: []string{"github.com/hashicorp/raft", "github.com/hashicorp/raft-boltdb", "github.com/hashicorp/go-hclog", "go.etcd.io/bbolt", "google.golang.org/grpc", "google.golang.org/protobuf"}},
	"node":          {inner: []string{"node", "presence", "runtime", "mesh", "raftstore", "util"}, outer: []string{"*"}},
	"cli":           {inner: []string{"cli", "node", "presence", "util"}, outer: []string{"*"}},
	// cli/tui: the TUI of harn's own agent knows the node through the
	// interface the command hands it, never the commands (cli).
	"cli/tui": {inner: []string{"node", "presence", "util"}, outer: []string{"github.com/charmbracelet"}},
	// cmd/harn (the client) and cmd/harnd (the daemon): the mains.
	// TestClientLinksNoDaemon keeps the daemon out of harn.
	"cmd":    {inner: []string{"cli", "node", "util"}, outer: []string{"*"}},
	"deploy": {},
	// internal/testsupport (and its modeltest, the scripted model server):
	// shared test helpers, imported by _test.go files only; its fakeagent
	// (an interactive agent for hosted terminals) reads its terminal raw.
	"internal": {inner: []string{"internal"}, outer: []string{"github.com/anishathalye/porcupine", "golang.org/x/term"}},
	// internal/testsupport/barelist: a bare memberlist process, the
	// yardstick of the mesh's benchmarks (built by them; never shipped).
	"internal/testsupport/barelist": {outer: []string{"github.com/hashicorp/memberlist"}},
	// internal/cmd/protoc-gen-harnlocal: the local wire's generator,
	// which `make proto` runs (never shipped).
	"internal/cmd": {outer: []string{"google.golang.org/protobuf"}},
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
			return nil // arch_test.go
		}
		rule, ok := allowed[ruleKey(filepath.ToSlash(filepath.Dir(path)))]
		if !ok {
			t.Errorf("%s: top-level folder %q is not in docs/design.md's table", path, top)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !importOK(p, rule.inner, rule.outer) {
				t.Errorf("%s imports %s, against the direction in docs/design.md", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ruleKey is the table's key for a folder: the longest key that is the
// folder or one of its parents (a sub-folder may have its own row), else
// the top-level folder.
func ruleKey(dir string) string {
	best := strings.SplitN(dir, "/", 2)[0]
	for k := range allowed {
		if (dir == k || strings.HasPrefix(dir, k+"/")) && len(k) > len(best) {
			best = k
		}
	}
	return best
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
	if tr := allowed[ruleKey("cli/tui")]; importOK(module+"cli", tr.inner, tr.outer) {
		t.Fatal("cli/tui importing cli must be refused")
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

// roomBelow names, for a room under node/, the rooms it must not import:
// the cluster room (node/cluster) wires the mesh's trust (node/meshtrust),
// never the other way, and neither reaches the local half's feature rooms.
var roomBelow = map[string][]string{
	"node/meshtrust": {"node/cluster", "node/sessions", "node/tasks", "node/alerts", "node/board"},
	"node/cluster":   {"node/sessions", "node/tasks", "node/alerts", "node/board", "node/heartbeat"},
}

// TestClusterRoomsPointDown: node/meshtrust does not import node/cluster,
// and the cluster rooms import none of the local half's rooms (the node
// hands them what they need through interfaces they declare).
func TestClusterRoomsPointDown(t *testing.T) {
	for room, banned := range roomBelow {
		files, err := filepath.Glob(room + "/*.go")
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("no %s", room)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, b := range banned {
					if p == module+b || strings.HasPrefix(p, module+b+"/") {
						t.Errorf("%s imports %s: the arrow points up", path, p)
					}
				}
			}
		}
	}
}

// sessionsMayImport are the only packages of the module node/sessions may
// import: the core emits what changed and features subscribe, so it
// imports neither the node root nor any feature room.
var sessionsMayImport = []string{"presence", "util", "node/ledger", "node/clockguard"}

// TestSessionsImportNoFeature: node/sessions, the local half, imports no
// room above it (tasks, alerts, gossip, heartbeat, remint, ...) and not
// the node root.
func TestSessionsImportNoFeature(t *testing.T) {
	files, err := filepath.Glob("node/sessions/*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no node/sessions")
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			allowed := false
			for _, a := range sessionsMayImport {
				if rest == a || strings.HasPrefix(rest, a+"/") {
					allowed = true
				}
			}
			if !allowed {
				t.Errorf("%s imports %s: the sessions room notifies subscribers and calls into none", path, p)
			}
		}
	}
}

// remotepolicyMayImport are the only packages of the module
// node/remotepolicy may import: it reads the node's sessions through its
// own Sessions interface, never the task host or the node root.
var remotepolicyMayImport = []string{"runtime", "util", "node/tasks/taskwire"}

// TestRemotePolicyImportsNoHost: the room of what another node's caller
// may choose is pure policy over the wire types.
func TestRemotePolicyImportsNoHost(t *testing.T) {
	files, err := filepath.Glob("node/remotepolicy/*.go")
	if err != nil || len(files) == 0 {
		t.Fatal("no node/remotepolicy", err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			allowed := false
			for _, a := range remotepolicyMayImport {
				allowed = allowed || rest == a || strings.HasPrefix(rest, a+"/")
			}
			if !allowed {
				t.Errorf("%s imports %s: the remote policy reads sessions through its Sessions interface", path, p)
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
			if p, _ := strconv.Unquote(imp.Path.Value); p == module+"internal/testsupport" || strings.HasPrefix(p, module+"internal/testsupport/") {
				t.Errorf("%s imports %s, which is for tests only", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// daemonPackages are the module's packages that link the node's stores
// (Pebble, raft, memberlist, OTel's SDK, Prometheus) or harn's agent loop
// and its provider SDKs: harnd's, never harn's.
var daemonPackages = []string{"node", "node/ledger", "node/tracing", "node/metrics", "node/claims",
	"node/registry", "node/alerts", "node/gossip", "mesh", "raftstore", "node/tasks", "runtime/agent",
	"node/cluster", "node/meshtrust"}

// daemonModules are the outside modules harn must not link: the node's
// stores and telemetry, and the provider and tool SDKs of harn's agent
// loop (runtime/agent), which only the node runs.
var daemonModules = []string{"github.com/cockroachdb/pebble", "github.com/hashicorp/raft",
	"github.com/hashicorp/memberlist", "go.opentelemetry.io/otel/sdk", "github.com/prometheus/client_golang",
	"github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go", "github.com/tiktoken-go/tokenizer",
	"github.com/modelcontextprotocol/go-sdk"}

// TestClientLinksNoDaemon: cli imports none of the daemon's packages (the
// command that runs the node lives in cmd/harnd, the only importer of node
// among the commands), cmd/harn imports cli alone, and the packages harn
// links name none of the daemon's modules.
func TestClientLinksNoDaemon(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		slash := filepath.ToSlash(path)
		client := strings.HasPrefix(slash, "cli/") || strings.HasPrefix(slash, "cmd/harn/")
		if d.IsDir() || !client || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, dp := range daemonPackages {
				if p == module+dp {
					t.Errorf("%s imports %s, which only harnd links (cmd/harnd)", path, p)
				}
			}
			if strings.HasPrefix(slash, "cmd/harn/") && strings.HasPrefix(p, module) && p != module+"cli" {
				t.Errorf("%s imports %s; harn's main calls cli only", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list harn's dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "./cmd/harn").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/harn: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, m := range daemonModules {
			if dep == m || strings.HasPrefix(dep, m+"/") {
				t.Errorf("harn links %s (a module of the daemon)", dep)
			}
		}
		for _, dp := range daemonPackages {
			if dep == module+dp {
				t.Errorf("harn links %s, which only harnd links", dep)
			}
		}
	}
}
