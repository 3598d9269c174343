package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testServerFlag is the --mcp value that runs this test binary as a stdio
// MCP server.
func testServerFlag(t *testing.T, name string) MCPServer {
	t.Helper()
	s, err := ParseMCPFlag(name + "='" + os.Args[0] + "' -test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	s.Env = map[string]string{"HARN_TOOLS_TEST_MCP": "1"}
	return s
}

func waitGeneration(t *testing.T, b *Toolbox, after uint64) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if b.Generation() > after {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the catalog generation stayed at %d", after)
}

func TestMCPStdioServerIsDiscoveredInspectedLoadedAndCalled(t *testing.T) {
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{testServerFlag(t, "t")}}})
	if _, ok := f.spec("mcp__t__echo"); ok {
		t.Fatal("an MCP tool is in the specs before tools_load")
	}
	if out := f.mustCall(ToolSearch, map[string]any{"query": "echo"}); !strings.Contains(out, `"name":"mcp__t__echo"`) {
		t.Fatal(out)
	}
	out := f.mustCall(ToolInsp, map[string]any{"name": "mcp__t__echo"})
	if !strings.Contains(out, `"provider":"mcp:t"`) || !strings.Contains(out, `"text"`) || !strings.Contains(out, `"mutating":true`) {
		t.Fatal(out)
	}
	// Calling before loading is refused by the pre-call check, and by the box.
	hash := ""
	for _, c := range f.box.Capabilities() {
		if c.Name == "mcp__t__echo" {
			hash = c.ContractHash
		}
	}
	if _, err := f.rt.Check(f.task, runtime.CallRequest{Capability: "mcp__t__echo", Input: []byte(`{"text":"hi"}`), ContractHash: hash}); !errors.Is(err, runtime.ErrNotLoaded) {
		t.Fatalf("call before load: %v", err)
	}
	if _, err := f.box.Run(context.Background(), Call{Name: "mcp__t__echo", Args: []byte(`{"text":"hi"}`), Task: f.task, Dir: f.dir}); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("box before load: %v", err)
	}
	if out := f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__echo"}); !strings.Contains(out, `"admitted":true`) {
		t.Fatal(out)
	}
	if got := names(f.box.Specs("", f.task)); !strings.HasSuffix(got, "skills_activate,mcp__t__echo") {
		t.Fatal(got)
	}
	if out := f.mustCall("mcp__t__echo", map[string]any{"text": "hi"}); out != "echo: hi\n" {
		t.Fatalf("%q", out)
	}
	// Arguments are checked against the tool's schema before they are sent.
	if _, err := f.call("mcp__t__echo", map[string]any{"text": 5}); !errors.Is(err, ErrBadArgs) {
		t.Fatal(err)
	}
	// Replies are bounded.
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__big"})
	if out := f.mustCall("mcp__t__big", map[string]any{}); len(out) > DefaultMaxOutput || !strings.Contains(out, "output cut") {
		t.Fatalf("%d bytes", len(out))
	}
}

// TestAChangedMCPToolIsWithdrawnAndTheModelIsTold: after an MCP server
// changes a loaded tool's schema, the task's requests no longer offer the
// tool with its old schema (nor with a new one its snapshot cannot
// call): the box withdraws it, unloads it in the runtime, and the next
// request's instructions tell the model so. A call made anyway is told
// to load it, and tools_load says the contract changed; a later task
// takes the new contract.
func TestAChangedMCPToolIsWithdrawnAndTheModelIsTold(t *testing.T) {
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{testServerFlag(t, "t")}}})
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__echo"})
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__bump"})
	f.mustCall("mcp__t__echo", map[string]any{"text": "a"})
	before := f.box.Generation()
	if _, ok := f.spec("mcp__t__echo"); !ok {
		t.Fatal("the loaded tool is not offered")
	}
	f.mustCall("mcp__t__bump", map[string]any{})
	waitGeneration(t, f.box, before) // tools/list_changed moved the catalog
	if s, ok := f.spec("mcp__t__echo"); ok {
		t.Fatalf("the changed tool is still offered: %s %s", s.Hash, s.Schema)
	}
	if _, ok := f.spec("mcp__t__bump"); !ok {
		t.Fatal("an unchanged tool of the same server was withdrawn")
	}
	ins := strings.Join(f.box.Instructions("", f.task), "\n")
	if !strings.Contains(ins, "mcp__t__echo was withdrawn") || !strings.Contains(ins, "changed its schema") {
		t.Fatalf("the model is not told: %q", ins)
	}
	if cv, _ := f.rt.Context(f.task); slices.Contains(cv.Loaded, "mcp__t__echo") {
		t.Fatalf("the withdrawn tool is still loaded in the runtime: %v", cv.Loaded)
	}
	// A call made anyway (as the loop makes it: no spec, no hash).
	if _, err := f.call("mcp__t__echo", map[string]any{"text": "b"}); !errors.Is(err, runtime.ErrNotLoaded) {
		t.Fatalf("call after the change: %v", err)
	}
	if _, err := f.box.Run(context.Background(), Call{Name: "mcp__t__echo", Args: []byte(`{"text":"b"}`), Task: f.task, Dir: f.dir}); err == nil {
		t.Fatal("the box ran a withdrawn tool")
	}
	if _, err := f.call(ToolLoad, map[string]any{"name": "mcp__t__echo"}); !errors.Is(err, ErrContractChanged) {
		t.Fatalf("loading it again in this task: %v", err)
	}
	if _, ok := f.spec("mcp__t__echo"); ok {
		t.Fatal("a refused load left the tool offered")
	}
	// A task started after the change takes the new contract.
	f.start(fixOpts{})
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__echo"})
	if out := f.mustCall("mcp__t__echo", map[string]any{"text": "c", "times": 2}); out != "echo2: c\n" {
		t.Fatalf("%q", out)
	}
	if ins := strings.Join(f.box.Instructions("", f.task), "\n"); strings.Contains(ins, "withdrawn") {
		t.Fatalf("a new task is told of another task's withdrawal: %q", ins)
	}
}

func TestDisabledProviderOverridesEverySnapshot(t *testing.T) {
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{testServerFlag(t, "t")}}})
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__echo"})
	f.mustCall("mcp__t__echo", map[string]any{"text": "a"})
	f.rt.SetProviderEnabled("mcp:t", false)
	if _, err := f.call("mcp__t__echo", map[string]any{"text": "a"}); !errors.Is(err, runtime.ErrProviderDisabled) {
		t.Fatalf("disabled: %v", err)
	}
	f.mustCall(ToolGlob, map[string]any{"pattern": "*"}) // core goes on
	f.rt.SetProviderEnabled("mcp:t", true)
	f.mustCall("mcp__t__echo", map[string]any{"text": "a"})
	// "mcp", the provider of external agents' MCP tools, stops every server.
	f.rt.SetProviderEnabled("mcp", false)
	if _, err := f.call("mcp__t__echo", map[string]any{"text": "a"}); !errors.Is(err, runtime.ErrProviderDisabled) {
		t.Fatalf("mcp disabled: %v", err)
	}
	f.rt.SetProviderEnabled("mcp", true)
	f.mustCall("mcp__t__echo", map[string]any{"text": "a"})
}

func TestCloseWaitsForTheStdioServer(t *testing.T) {
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{testServerFlag(t, "t")}}})
	f.box.mu.Lock()
	pid := f.box.conns[0].cmd.Process.Pid
	f.box.mu.Unlock()
	if err := f.box.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("server %d still there after Close: %v", pid, err)
	}
	if err := f.box.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if res, err := f.box.Run(context.Background(), Call{Name: ToolRead}); !errors.Is(err, ErrClosed) || !res.IsError {
		t.Fatal(err)
	}
}

func TestMCPServerThatFailsToStartIsNamed(t *testing.T) {
	rt, _ := runtime.New(runtime.Config{Ledger: runtime.NewMemLedger(), Key: []byte("test-key-0123456789")})
	b, err := New(Config{Runtime: rt, NoMCPFiles: true, SkillDirs: []string{},
		MCP: []MCPServer{{Name: "gone", Command: "/nonexistent/server --x"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Open(context.Background())
	if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "gone") {
		t.Fatal(err)
	}
	if len(b.Capabilities()) != 11 {
		t.Fatal("the box does not work without the server")
	}
}

func TestMCPStreamableHTTPServer(t *testing.T) {
	srv := testServer()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{{Name: "h", URL: ts.URL}}}})
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__h__echo"})
	if out := f.mustCall("mcp__h__echo", map[string]any{"text": "web"}); out != "echo: web\n" {
		t.Fatalf("%q", out)
	}
	_ = f.box.Close() // before the server: the session ends first
}

func TestLoadMCPFile(t *testing.T) {
	dir := t.TempDir()
	p := ProjectMCPFile(dir)
	writeFileT(t, p, `{"mcpServers":{"gh":{"command":"gh-mcp","args":["--ro"],"env":{"A":"1"}},"web":{"type":"http","url":"https://x.example/mcp","bearer_token_env":"WEB_TOKEN"}}}`)
	ss, err := LoadMCPFile(p)
	if err != nil || len(ss) != 2 || ss[0].Name != "gh" || ss[1].URL == "" || !ss[1].isHTTP() {
		t.Fatalf("%+v %v", ss, err)
	}
	writeFileT(t, p, `{"mcpServers":{"gh":{"comand":"x"}}}`)
	if _, err := LoadMCPFile(p); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if ss, err := LoadMCPFile(dir + "/none.json"); err != nil || ss != nil {
		t.Fatal(err)
	}
	if _, err := ParseMCPFlag("bad name=x"); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if _, err := ParseMCPFlag("noequals"); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
}

func TestToolsLoadAnswersNeedMarginAndCeilingWhenItDoesNotFit(t *testing.T) {
	// Find the sizes with a first box, then size the budget so the core
	// tools fit and the server's echo does not.
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{testServerFlag(t, "t")}}})
	core, echo := 0, 0
	for _, c := range f.box.Capabilities() {
		if c.Core {
			core += c.Tokens
		}
		if c.Name == "mcp__t__echo" {
			echo = c.Tokens
		}
	}
	// ceiling = 80 % of usable, margin = 5 % of the ceiling: room = 76 %.
	// The core tools are the budget's base (the loop measures them in its
	// request), not charged again as active.
	usable := (core + echo/2) * 100 / 76
	f.start(fixOpts{budget: runtime.Budget{UsableInput: usable, Base: core}})
	res, err := f.call(ToolLoad, map[string]any{"name": "mcp__t__echo"})
	if !errors.Is(err, runtime.ErrNotAdmitted) || !res.IsError {
		t.Fatalf("%v %q", err, res.Content)
	}
	for _, k := range []string{`"need":` + strconv.Itoa(echo), `"margin":`, `"ceiling":` + strconv.Itoa(usable*80/100), `"admitted":false`} {
		if !strings.Contains(res.Content, k) {
			t.Fatalf("%s missing in %s", k, res.Content)
		}
	}
	if _, ok := f.spec("mcp__t__echo"); ok {
		t.Fatal("a tool that was not admitted is in the specs")
	}
	// Nothing loaded was evicted to make room.
	if cv, _ := f.rt.Context(f.task); len(cv.Loaded) != 11 {
		t.Fatal(cv.Loaded)
	}
}

func TestConcurrentCallsAndSpecsWhileTheListChanges(t *testing.T) {
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{testServerFlag(t, "t")}}})
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__echo"})
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__bump"})
	before := f.box.Generation()
	spec, _ := f.spec("mcp__t__echo")
	errs := make(chan error, 8)
	for i := 0; i < 4; i++ {
		go func() {
			var err error
			for j := 0; j < 10 && err == nil; j++ {
				_ = f.box.Specs("", f.task)
				_ = f.box.Instructions("", f.task)
				_, err = f.box.Run(context.Background(), Call{Name: "mcp__t__echo", Args: []byte(`{"text":"x"}`), Task: f.task, Dir: f.dir})
				if errors.Is(err, ErrContractChanged) || errors.Is(err, ErrServer) || errors.Is(err, ErrNotLoaded) {
					// The bump landed first: refused by the box once it
					// re-listed (or withdrew the tool), by the server (times
					// is now required) before.
					err = nil
				}
			}
			errs <- err
		}()
	}
	f.mustCall("mcp__t__bump", map[string]any{})
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	waitGeneration(t, f.box, before)
	for _, c := range f.box.Capabilities() {
		if c.Name == "mcp__t__echo" && c.ContractHash == spec.Hash {
			t.Fatal("hash did not move")
		}
	}
	if _, ok := f.spec("mcp__t__echo"); ok {
		t.Fatal("the changed tool is still offered")
	}
}

func TestCoreWorkspaceToolsAreLoadedWhenTheTaskStarts(t *testing.T) {
	f := newFixture(t, fixOpts{})
	cv, err := f.rt.Context(f.task)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cv.Loaded, ",") != "capabilities_inspect,capabilities_list,capabilities_search,edit,glob,grep,read,shell,skills_activate,tools_load,write" {
		t.Fatal(cv.Loaded)
	}
	writeFileT(t, f.dir+"/a.txt", "x\n")
	f.mustCall(ToolRead, map[string]any{"path": "a.txt"}) // no tools_load needed
}

func TestLoadedToolSchemasAreTaskScoped(t *testing.T) {
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{testServerFlag(t, "t")}}})
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__echo"})
	first := f.task
	f.start(fixOpts{})
	if _, ok := f.spec("mcp__t__echo"); ok {
		t.Fatal("a tool loaded by another task is in this task's specs")
	}
	if got := names(f.box.Specs("", first)); !strings.HasSuffix(got, ",mcp__t__echo") {
		t.Fatal(got)
	}
}

func TestMCPCallIsBoundedInTimeAndCancellable(t *testing.T) {
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{testServerFlag(t, "t")}, MCPTimeout: 300 * time.Millisecond}})
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__slow"})
	if res, err := f.call("mcp__t__slow", map[string]any{}); !errors.Is(err, ErrTimeout) || !res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.box.Run(ctx, Call{Name: "mcp__t__slow", Args: []byte(`{}`), Task: f.task, Dir: f.dir})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestProjectAndUserMCPFilesConfigureServers(t *testing.T) {
	user, project := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", user)
	bin, _ := json.Marshal(os.Args[0])
	srv := `{"command":` + string(bin) + `,"args":["-test.run=^$"],"env":{"HARN_TOOLS_TEST_MCP":"1"}}`
	writeFileT(t, ProjectMCPFile(project), `{"mcpServers":{"proj":`+srv+`}}`)
	writeFileT(t, UserMCPFile(), `{"mcpServers":{"mine":`+srv+`}}`)
	f := newFixture(t, fixOpts{cfg: Config{Project: project}, files: true})
	out := f.mustCall(ToolSearch, map[string]any{"query": "echo"})
	if !strings.Contains(out, "mcp__proj__echo") || !strings.Contains(out, "mcp__mine__echo") {
		t.Fatal(out)
	}
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__proj__echo"})
	if out := f.mustCall("mcp__proj__echo", map[string]any{"text": "p"}); out != "echo: p\n" {
		t.Fatalf("%q", out)
	}
}

// TestAnUntrustedProjectStartsNoServerAndLoadsNoSkill: without the trust
// check's files (an untrusted project) the project's mcp.json starts
// nothing and its skills do not load, whatever is on disk; the user's
// file still runs.
func TestAnUntrustedProjectStartsNoServerAndLoadsNoSkill(t *testing.T) {
	user, project := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", user)
	bin, _ := json.Marshal(os.Args[0])
	srv := `{"command":` + string(bin) + `,"args":["-test.run=^$"],"env":{"HARN_TOOLS_TEST_MCP":"1"}}`
	writeFileT(t, ProjectMCPFile(project), `{"mcpServers":{"proj":`+srv+`}}`)
	writeFileT(t, UserMCPFile(), `{"mcpServers":{"mine":`+srv+`}}`)
	skillFile(t, project, "review", "project", "P")
	rt, err := runtime.New(runtime.Config{Ledger: runtime.NewMemLedger(), Key: []byte("test-key-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Runtime: rt, Project: project})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(b.Servers(), ","); got != "mine" {
		t.Fatalf("servers %q; want the user's alone", got)
	}
	for _, c := range b.Capabilities() {
		if c.Name == "review" || strings.HasPrefix(c.Name, "mcp__proj__") {
			t.Fatalf("an untrusted project's %s loaded", c.Name)
		}
	}
}

// A discovered tool the task has not loaded is not in the loop's tools,
// so a model that calls it anyway states no contract hash: it is told to
// load it first, naming the call to make, not that its contract differs.
func TestCallingAnUnloadedToolAnswersLoadItFirstWithToolsLoad(t *testing.T) {
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{testServerFlag(t, "t")}}})
	want := `tools_load {"name":"mcp__t__echo"}`
	_, err := f.call("mcp__t__echo", map[string]any{"text": "hi"}) // as the loop calls: no spec, no hash
	if !errors.Is(err, runtime.ErrNotLoaded) || errors.Is(err, runtime.ErrContractHash) || !strings.Contains(err.Error(), want) {
		t.Fatalf("a call of an unloaded tool: %v; want %v naming %s", err, runtime.ErrNotLoaded, want)
	}
	if _, err := f.box.Run(context.Background(), Call{Name: "mcp__t__echo", Args: []byte(`{"text":"hi"}`), Task: f.task, Dir: f.dir}); !errors.Is(err, ErrNotLoaded) || !strings.Contains(err.Error(), want) {
		t.Fatalf("box before load: %v", err)
	}
	// A wrong hash stated for it is still a contract mismatch.
	if _, err := f.rt.Check(f.task, runtime.CallRequest{Capability: "mcp__t__echo", Input: []byte(`{}`), ContractHash: "bogus"}); !errors.Is(err, runtime.ErrContractHash) {
		t.Fatalf("a wrong hash: %v", err)
	}
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__t__echo"})
	if out := f.mustCall("mcp__t__echo", map[string]any{"text": "hi"}); out != "echo: hi\n" {
		t.Fatalf("%q", out)
	}
}
