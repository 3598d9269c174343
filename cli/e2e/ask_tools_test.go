package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// The tool names a harn request carries before anything is loaded: the
// core tools, then the discovery tools, exactly.
var baseTools = []string{"read", "write", "edit", "shell", "grep", "glob",
	"capabilities_list", "capabilities_search", "capabilities_inspect", "tools_load", "skills_activate"}

const echoTool = "mcp__demo__echo"

var (
	mcpOnce sync.Once
	mcpBin  string
	mcpErr  error
)

// buildMCPServer compiles the stdio MCP server of testdata/mcpserver (go-sdk's
// server side) once per test binary.
func buildMCPServer(t *testing.T) string {
	t.Helper()
	mcpOnce.Do(func() {
		dir, err := os.MkdirTemp("", "harn-e2e-mcp-")
		if err != nil {
			mcpErr = err
			return
		}
		bin := filepath.Join(dir, "mcpserver")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/harn-dev/harn/cli/e2e/testdata/mcpserver").CombinedOutput()
		if err != nil {
			mcpErr = errors.New(err.Error() + ": " + string(out))
			return
		}
		mcpBin = bin
	})
	if mcpErr != nil {
		t.Fatalf("build the MCP server: %v", mcpErr)
	}
	return mcpBin
}

// askIn runs harn ask in dir (the session's project) against the model
// server m, with the demo MCP server as --mcp demo=...; pidFile, when set,
// is where the server writes its process id.
func askIn(t *testing.T, e *env, dir string, m *modeltest.Server, pidFile string, extra ...string) result {
	t.Helper()
	srv := buildMCPServer(t)
	cmdline := srv
	if pidFile != "" {
		cmdline += " --pid " + pidFile
	}
	args := append([]string{"ask", "--provider-url", m.URL(), "--model", "test-model", "--mcp", "demo=" + cmdline}, extra...)
	return runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), dir, args...)
}

func call(id, name, args string) modeltest.Call {
	return modeltest.Call{ID: id, Name: name, Args: args}
}

func calls(cs ...modeltest.Call) modeltest.Reply { return modeltest.Calls(true, cs...) }

// toolResults are the contents of a request's tool messages, by call id.
func toolResults(req map[string]any) map[string]string {
	out := map[string]string{}
	ms, _ := req["messages"].([]any)
	for _, m := range ms {
		mm, _ := m.(map[string]any)
		if mm["role"] != "tool" {
			continue
		}
		id, _ := mm["tool_call_id"].(string)
		switch c := mm["content"].(type) {
		case string:
			out[id] = c
		case []any:
			var b strings.Builder
			for _, p := range c {
				pm, _ := p.(map[string]any)
				s, _ := pm["text"].(string)
				b.WriteString(s)
			}
			out[id] = b.String()
		}
	}
	return out
}

// systemText is the text of a request's system messages.
func systemText(req map[string]any) string {
	var b strings.Builder
	for _, m := range modeltest.Messages(req) {
		if s, ok := strings.CutPrefix(m, "system:"); ok {
			b.WriteString(s + "\n")
		}
	}
	return b.String()
}

func TestAskMCPToolIsDiscoveredInspectedLoadedAndCalled(t *testing.T) {
	e := askEnv(t)
	m := modeltest.New(t,
		calls(call("l1", "capabilities_list", `{"kind":"tool"}`), call("s1", "capabilities_search", `{"query":"echo demo"}`)),
		calls(call("i1", "capabilities_inspect", `{"name":"`+echoTool+`"}`)),
		calls(call("e0", echoTool, `{"text":"too early"}`)),
		calls(call("t1", "tools_load", `{"name":"`+echoTool+`"}`)),
		calls(call("e1", echoTool, `{"text":"pelican"}`)),
		modeltest.Text("it echoed pelican"))
	r := askIn(t, e, t.TempDir(), m, "", "--profile", "full", "echo pelican")
	// the call before tools_load was refused: the ask says so and exits 19
	if r.code != 19 || strings.TrimSpace(r.stdout) != "it echoed pelican" || !strings.Contains(r.stderr, "refused 1 call: "+echoTool) {
		t.Fatalf("%v", r)
	}
	reqs := m.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6: %v", len(reqs), m.Raw())
	}
	// Until tools_load admitted it, the server's tool is not in the tools
	// the model sees: those are exactly the core and discovery tools.
	for i := 0; i < 4; i++ {
		if got := modeltest.ToolNames(reqs[i]); !slices.Equal(got, baseTools) {
			t.Fatalf("request %d tools %v, want exactly %v", i, got, baseTools)
		}
	}
	for i := 4; i < 6; i++ {
		if got := modeltest.ToolNames(reqs[i]); !slices.Equal(got, append(slices.Clone(baseTools), echoTool)) {
			t.Fatalf("request %d tools %v, want the base tools then %s", i, got, echoTool)
		}
	}
	res := toolResults(reqs[1])
	if !strings.Contains(res["l1"], echoTool) || !strings.Contains(res["s1"], echoTool) || strings.Contains(res["s1"], `"read"`) {
		t.Fatalf("discovery did not find the server's tool (or search did not filter): %v", res)
	}
	if in := toolResults(reqs[2])["i1"]; !strings.Contains(in, `"contract_hash"`) || !strings.Contains(in, `"provider":"mcp:demo"`) ||
		!strings.Contains(in, `"schema"`) {
		t.Fatalf("inspect: %s", in)
	}
	if early := toolResults(reqs[3])["e0"]; !strings.Contains(early, "refused by harn") {
		t.Fatalf("a call before tools_load was not refused: %s", early)
	}
	if ld := toolResults(reqs[4])["t1"]; !strings.Contains(ld, `"admitted":true`) {
		t.Fatalf("tools_load: %s", ld)
	}
	if out := strings.TrimSpace(toolResults(reqs[5])["e1"]); out != "echo: pelican" {
		t.Fatalf("the MCP call's result: %q", out)
	}
}

// mcpChangedScript loads echo and bump, calls bump (the server changes
// echo's schema and says its list changed), then inspects echo until the
// box has the new contract (bounded), then calls echo.
func mcpChangedScript(m *modeltest.Server) {
	m.Add(calls(call("t1", "tools_load", `{"name":"`+echoTool+`"}`), call("t2", "tools_load", `{"name":"mcp__demo__bump"}`)),
		calls(call("b1", "mcp__demo__bump", `{}`)))
	n := 0
	m.SetFallback(func(req map[string]any) modeltest.Reply {
		res := toolResults(req)
		switch {
		case res["e1"] != "":
			return modeltest.Text("done")
		case n >= 200:
			return modeltest.Text("the contract never changed")
		case n > 0 && strings.Contains(res["i"+strconv.Itoa(n)], "changed since this task started"):
			return calls(call("e1", echoTool, `{"text":"after the change","times":2}`))
		}
		n++
		return calls(call("i"+strconv.Itoa(n), "capabilities_inspect", `{"name":"`+echoTool+`"}`))
	})
}

// TestAskMCPSchemaChangeMidTaskWithdrawsTheTool: once the server changed
// echo's schema, the task's requests no longer offer echo and tell the
// model it was withdrawn; a call made anyway is refused before it runs.
func TestAskMCPSchemaChangeMidTaskWithdrawsTheTool(t *testing.T) {
	e := askEnv(t)
	m := modeltest.New(t)
	mcpChangedScript(m)
	r := askIn(t, e, t.TempDir(), m, "", "--profile", "full", "bump then echo")
	if r.code != 19 || strings.TrimSpace(r.stdout) != "done" || !strings.Contains(r.stderr, echoTool+" (load_state)") {
		t.Fatalf("%v\nrequests: %v", r, m.Raw())
	}
	reqs := m.Requests()
	last := toolResults(reqs[len(reqs)-1])["e1"]
	if !strings.Contains(last, "refused by harn") || !strings.Contains(last, "tools_load") {
		t.Fatalf("the call after the schema change was not refused: %q", last)
	}
	told := false
	for _, name := range modeltest.ToolNames(reqs[len(reqs)-1]) {
		if name == echoTool {
			t.Fatalf("the request after the change still offers %s", echoTool)
		}
	}
	for _, msg := range modeltest.Messages(reqs[len(reqs)-1]) {
		told = told || strings.Contains(msg, echoTool+" was withdrawn")
	}
	if !told {
		t.Fatalf("the model was not told of the withdrawal: %v", modeltest.Messages(reqs[len(reqs)-1]))
	}
	for _, raw := range m.Raw() {
		if strings.Contains(raw, "echo2:") {
			t.Fatal("the changed tool ran")
		}
	}
}

func writeSkill(t *testing.T, project, name, body string) {
	t.Helper()
	d := filepath.Join(project, ".harn", "skills", name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	s := "---\nname: " + name + "\ndescription: the " + name + " skill\n---\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAskSkillActivatedForOneStepAndBySlashForTheTask(t *testing.T) {
	e := askEnv(t)
	project := t.TempDir()
	writeSkill(t, project, "review", "REVIEW-RULES-BODY")
	writeSkill(t, project, "lint", "LINT-RULES-BODY")
	e.ok("trust", "add", project) // a project's skills load only where it is trusted
	m := modeltest.New(t,
		calls(call("a1", "skills_activate", `{"name":"lint"}`)),
		calls(call("g1", "glob", `{"pattern":"*"}`)),
		calls(call("g2", "glob", `{"pattern":"*"}`)),
		modeltest.Text("reviewed"))
	r := askIn(t, e, project, m, "", "--profile", "full", "/review the tree")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "reviewed" {
		t.Fatalf("%v", r)
	}
	reqs := m.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests: %v", len(reqs), m.Raw())
	}
	for i, req := range reqs {
		sys := systemText(req)
		if !strings.Contains(sys, "REVIEW-RULES-BODY") {
			t.Fatalf("request %d lacks the /review skill, active for the task: %q", i, sys)
		}
		// lint, activated by the model in step 1, is in the request of
		// step 2 only.
		if want := i == 1; strings.Contains(sys, "LINT-RULES-BODY") != want {
			t.Fatalf("request %d: lint skill present %v, want %v: %q", i, !want, want, sys)
		}
	}
	if a := toolResults(reqs[1])["a1"]; !strings.Contains(a, `"activated":"lint"`) {
		t.Fatalf("skills_activate: %s", a)
	}
}

func TestAskMCPToolOutsideTheGrantsIsRefused(t *testing.T) {
	e := askEnv(t)
	m := modeltest.New(t,
		calls(call("t1", "tools_load", `{"name":"`+echoTool+`"}`)),
		calls(call("e1", echoTool, `{"text":"x"}`)),
		modeltest.Text("not allowed"))
	// read-only loads every tool but executes only the read-only core ones.
	r := askIn(t, e, t.TempDir(), m, "", "--profile", "read-only", "echo x")
	if r.code != 19 || !strings.Contains(r.stderr, echoTool+" (grant)") {
		t.Fatalf("%v", r)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests: %v", len(reqs), m.Raw())
	}
	if ld := toolResults(reqs[1])["t1"]; !strings.Contains(ld, `"admitted":true`) {
		t.Fatalf("tools_load under read-only: %s", ld)
	}
	if got := toolResults(reqs[2])["e1"]; !strings.Contains(got, "refused by harn") || strings.Contains(got, "echo: x") {
		t.Fatalf("a loaded tool outside the grants ran: %q", got)
	}
}

// askTask runs harn ask --json in dir in the background and returns its
// events as they come; the demo server is --mcp demo.
func askTask(t *testing.T, e *env, dir string, m *modeltest.Server, extra ...string) <-chan map[string]any {
	t.Helper()
	args := append([]string{"ask", "--provider-url", m.URL(), "--model", "test-model", "--mcp", "demo=" + buildMCPServer(t)}, extra...)
	ch, _ := askJSONIn(t, e, dir, args)
	return ch
}

func TestAskMCPConfirmationFlowsThroughTaskConfirm(t *testing.T) {
	e := askEnv(t)
	m := modeltest.New(t,
		calls(call("t1", "tools_load", `{"name":"`+echoTool+`"}`)),
		calls(call("e1", echoTool, `{"text":"confirmed"}`)),
		modeltest.Text("ran after the confirmation"))
	g := grantsFile(t, "profile read-only\nexecute "+echoTool+" confirm\n")
	ch := askTask(t, e, t.TempDir(), m, "--grants", g, "echo it")
	req := waitFor(t, ch, "input.requested")
	if req["tool"] != echoTool {
		t.Fatalf("input requested for %v", req)
	}
	// The call waits: the session shows needs_input, and the server has
	// not been asked.
	var ss []sessionJSON
	mustJSON(t, e.ok("agents", "list", "--all", "--json"), &ss)
	waiting := false
	for _, s := range ss {
		waiting = waiting || (s.Agent == "harn" && s.Activity == "needs_input")
	}
	if !waiting {
		t.Fatalf("no harn session needs input: %+v", ss)
	}
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("%d model requests while the call waits, want 2", n)
	}
	e.ok("task", "confirm", req["task"].(string), req["call"].(string))
	if end := waitFor(t, ch, "turn.end"); end["status"] != "succeeded" {
		t.Fatalf("end %v", end)
	}
	reqs := m.Requests()
	if got := strings.TrimSpace(toolResults(reqs[len(reqs)-1])["e1"]); got != "echo: confirmed" {
		t.Fatalf("the confirmed call's result: %q", got)
	}
}

func TestAskProviderDisableOverridesARunningTasksSnapshot(t *testing.T) {
	e := askEnv(t)
	hold := make(chan struct{})
	second := calls(call("e2", echoTool, `{"text":"second"}`))
	second.Hold = hold
	m := modeltest.New(t,
		calls(call("t1", "tools_load", `{"name":"`+echoTool+`"}`)),
		calls(call("e1", echoTool, `{"text":"first"}`)),
		second,
		modeltest.Text("finished"))
	ch := askTask(t, e, t.TempDir(), m, "--profile", "full", "echo twice")
	// The third request (the second call) is held mid-stream: the
	// provider is switched off while the task runs.
	for i := 0; i < 3; i++ {
		select {
		case <-m.Arrived():
		case <-time.After(30 * time.Second):
			t.Fatalf("request %d did not arrive", i+1)
		}
	}
	e.ok("provider", "disable", "mcp:demo")
	close(hold)
	if end := waitFor(t, ch, "turn.end"); end["status"] != "succeeded" {
		t.Fatalf("end %v", end)
	}
	reqs := m.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := strings.TrimSpace(toolResults(reqs[2])["e1"]); got != "echo: first" {
		t.Fatalf("the call before the switch: %q", got)
	}
	if got := toolResults(reqs[3])["e2"]; !strings.Contains(got, "refused by harn") || !strings.Contains(got, "disabled") {
		t.Fatalf("the call after `harn provider disable mcp:demo` was not refused: %q", got)
	}
}

// gone reports whether pid no longer exists: killed and waited for (a
// zombie still exists).
func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// waitReaped waits, bounded, for the MCP server pid to be gone.
func waitReaped(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; !gone(pid); i++ {
		if time.Now().After(deadline) || i > 2000 {
			t.Fatalf("MCP server %d outlived %s", pid, what)
		}
		time.Sleep(pollEvery)
	}
}

func readPIDFile(t *testing.T, f string) int {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("pid file %q: %v", b, err)
	}
	return pid
}

func TestAskMCPServerDoesNotOutliveItsSession(t *testing.T) {
	e := askEnv(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	m := modeltest.New(t, modeltest.Text("hello"), modeltest.Text("hello again"))
	r := askIn(t, e, t.TempDir(), m, pidFile, "hi")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	// harn ask ended its session as it returned: its server is reaped
	pid := readPIDFile(t, pidFile)
	waitReaped(t, pid, "its session")
	var ss []sessionJSON
	mustJSON(t, e.ok("agents", "list", "--all", "--json"), &ss)
	session := ""
	for _, s := range ss {
		if s.Agent == "harn" && s.Ended {
			session = s.SessionID
		}
	}
	if session == "" {
		t.Fatalf("no ended harn session: %+v", ss)
	}
	// --session opens it again, its server with it, and ends it again
	os.Remove(pidFile)
	if r := run(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), "", "ask", "--session", session, "again"); r.code != 0 ||
		strings.TrimSpace(r.stdout) != "hello again" {
		t.Fatalf("a task on the ended session: %v", r)
	}
	waitReaped(t, readPIDFile(t, pidFile), "its reopened session")
}

func TestAskMCPServerDoesNotOutliveTheNode(t *testing.T) {
	e := newEnv(t)
	n := e.spawn(append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s"), "node", "--data-dir", e.dataDir, "--socket", e.socket)
	e.waitReady(n)
	pidFile := filepath.Join(t.TempDir(), "pid")
	m := modeltest.New(t, modeltest.Text("hello"))
	if r := askIn(t, e, t.TempDir(), m, pidFile, "hi"); r.code != 0 {
		t.Fatalf("%v", r)
	}
	pid := readPIDFile(t, pidFile)
	e.stopNode(n)
	waitReaped(t, pid, "the node")
}
