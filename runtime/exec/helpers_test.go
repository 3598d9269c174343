package exec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/util/clock"

	"go.uber.org/goleak"

	"github.com/harn-dev/harn/runtime"
	harnexec "github.com/harn-dev/harn/runtime/exec"
)

const (
	testSession = "s1"
	testGrace   = 5 * time.Second
	waitLimit   = 20 * time.Second // bound of every wait on a real process
	envHookSock = "EXECTEST_HOOK_SOCK"
)

var (
	fakeAgent    string // the built fake agent
	fakeAgentDir string
	buildOnce    sync.Once
	buildErr     error
)

// TestMain removes the fake agent once the tests are done, and fails the
// package's tests when a goroutine outlives them (goleak). Run with
// EXECTEST_HOOK_SOCK set, the test binary is instead the hook command the
// fake agent calls: it passes the hook payload to the test's bridge and
// prints the answer.
func TestMain(m *testing.M) {
	if sock := os.Getenv(envHookSock); sock != "" {
		hookClient(sock)
		os.Exit(0)
	}
	code := m.Run()
	if fakeAgentDir != "" {
		os.RemoveAll(fakeAgentDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// buildFakeAgent builds testdata/fakeagent once, for the tests that run it
// (fuzz workers never do).
func buildFakeAgent(t *testing.T) {
	t.Helper()
	buildOnce.Do(func() {
		fakeAgentDir, buildErr = os.MkdirTemp("", "fakeagent")
		if buildErr != nil {
			return
		}
		fakeAgent = filepath.Join(fakeAgentDir, "fakeagent")
		out, err := osexec.Command("go", "build", "-o", fakeAgent, "./testdata/fakeagent").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building the fake agent: %w: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// fixture is a real runtime with one session, an executor running the
// fake agent for it, and observers of everything the executor reports.
type fixture struct {
	t     *testing.T
	rt    *runtime.Runtime
	clk   *clock.Fake // nil with a real clock
	led   *runtime.MemLedger
	dir   string // the session's working directory
	marks string // the fake agent's marker files
	ex    *harnexec.Executor

	mu      sync.Mutex
	starts  []harnexec.Started
	firsts  []harnexec.FirstByte
	outputs []harnexec.Message
	steers  []harnexec.SteerResult
	ends    chan harnexec.TaskResult
	onStart func(harnexec.Started)
	stop    context.CancelFunc // stops the executor's Run
}

type option func(*fixtureConfig)

type fixtureConfig struct {
	driver    harnexec.Driver
	realClock bool
	hook      bool
}

func withDriver(d harnexec.Driver) option { return func(c *fixtureConfig) { c.driver = d } }
func withRealClock() option               { return func(c *fixtureConfig) { c.realClock = true } }
func withHook() option                    { return func(c *fixtureConfig) { c.hook = true } }

func claudeDriver() harnexec.Driver {
	d, _ := harnexec.Agent("claude", fakeAgent, "-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose")
	return d
}

func newFixture(t *testing.T, opts ...option) *fixture {
	t.Helper()
	buildFakeAgent(t)
	cfg := fixtureConfig{driver: claudeDriver()}
	for _, o := range opts {
		o(&cfg)
	}
	f := &fixture{t: t, led: runtime.NewMemLedger(), dir: t.TempDir(), marks: t.TempDir(), ends: make(chan harnexec.TaskResult, 16)}
	var clk clock.Clock = clock.Real{}
	if !cfg.realClock {
		f.clk = runtime.NewFakeClock()
		clk = f.clk
	}
	rt, err := runtime.New(runtime.Config{Clock: clk, Ledger: f.led, Key: []byte("test-node-key"), Grace: testGrace, DefaultProfile: "full"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.SetCatalog("claude-code", claudeCatalog(t)); err != nil {
		t.Fatal(err)
	}
	if err := rt.OpenSession(testSession, runtime.SessionConfig{Catalog: "claude-code", Workdir: f.dir}); err != nil {
		t.Fatal(err)
	}
	f.rt = rt
	env := []string{"FAKEAGENT_MARK=" + f.marks}
	if cfg.hook {
		sock := startBridge(t, rt)
		env = append(env, envHookSock+"="+sock, "FAKEAGENT_HOOK='"+os.Args[0]+"'")
	}
	ex, err := harnexec.New(harnexec.Config{
		Runtime: rt, Session: testSession, Driver: cfg.driver, Dir: f.dir, Env: env,
		Grace: testGrace, Clock: clk, Logger: slog.New(slog.DiscardHandler),
		OnStart: func(s harnexec.Started) {
			f.mu.Lock()
			f.starts = append(f.starts, s)
			hook := f.onStart
			f.mu.Unlock()
			if hook != nil {
				hook(s)
			}
		},
		OnFirstByte: func(b harnexec.FirstByte) { f.mu.Lock(); f.firsts = append(f.firsts, b); f.mu.Unlock() },
		OnOutput:    func(m harnexec.Message) { f.mu.Lock(); f.outputs = append(f.outputs, m); f.mu.Unlock() },
		OnSteer:     func(r harnexec.SteerResult) { f.mu.Lock(); f.steers = append(f.steers, r); f.mu.Unlock() },
		OnEnd:       func(r harnexec.TaskResult) { f.ends <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.ex = ex
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	f.stop = cancel
	go func() { done <- ex.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		deadline := time.Now().Add(waitLimit)
		for {
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Run returned %v, want context.Canceled", err)
				}
				return
			case <-time.After(10 * time.Millisecond):
			}
			if f.clk != nil {
				f.clk.Advance(testGrace) // a task that ignores SIGINT needs its grace period
			}
			if time.Now().After(deadline) {
				t.Fatal("the executor did not stop")
			}
		}
	})
	return f
}

// end waits for the next task the executor ends.
func (f *fixture) end() harnexec.TaskResult {
	f.t.Helper()
	select {
	case r := <-f.ends:
		return r
	case <-time.After(waitLimit):
		f.t.Fatal("no task ended in time")
		return harnexec.TaskResult{}
	}
}

// waitFor polls cond, bounded.
func (f *fixture) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fixture) marked(name string) bool {
	_, err := os.Stat(filepath.Join(f.marks, name))
	return err == nil
}

func (f *fixture) firstBytes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.firsts)
}

func (f *fixture) startsSeen() []harnexec.Started {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]harnexec.Started(nil), f.starts...)
}

// texts returns the messages of task, in order.
func (f *fixture) texts(task string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.outputs {
		if m.Task == task {
			out = append(out, m.Text)
		}
	}
	return out
}

// groupGone waits until the process group pgid has no process left.
func (f *fixture) groupGone(pgid int) {
	f.t.Helper()
	f.waitFor(fmt.Sprintf("process group %d to be gone", pgid), func() bool { return !harnexec.GroupAlive(pgid) || zombiesOnly(pgid) })
}

func (f *fixture) start(text string) string {
	f.t.Helper()
	v, err := f.rt.Start(testSession, runtime.Request{Text: text})
	if err != nil {
		f.t.Fatal(err)
	}
	return v.ID
}

func (f *fixture) task(id string) runtime.TaskView {
	f.t.Helper()
	v, err := f.rt.Task(id)
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

// records returns the ledger records of kind for task.
func (f *fixture) records(task string, kind runtime.RecordKind) []runtime.Record {
	rs, err := f.led.Records(task)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []runtime.Record
	for _, r := range rs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// The hook bridge stands in for the node's hook endpoint: the fake agent
// runs the test binary as its hook (see TestMain), which passes the
// PreToolUse or PostToolUse payload here with the task from HARN_TASK; the
// bridge asks the runtime (Begin, End) and answers in Claude Code's format.

type bridgeRequest struct {
	Task    string          `json:"task"`
	Payload json.RawMessage `json:"payload"`
}

func startBridge(t *testing.T, rt *runtime.Runtime) string {
	dir, err := os.MkdirTemp("", "hk")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait(); os.RemoveAll(dir) })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(waitLimit))
				var req bridgeRequest
				if err := json.NewDecoder(io.LimitReader(c, 1<<20)).Decode(&req); err != nil {
					return
				}
				c.Write(answerHook(rt, req))
			}()
		}
	}()
	return sock
}

func answerHook(rt *runtime.Runtime, req bridgeRequest) []byte {
	var p struct {
		Event        string          `json:"hook_event_name"`
		Tool         string          `json:"tool_name"`
		Input        json.RawMessage `json:"tool_input"`
		ID           string          `json:"tool_use_id"`
		ToolResponse json.RawMessage `json:"tool_response"`
	}
	if json.Unmarshal(req.Payload, &p) != nil {
		return nil
	}
	switch p.Event {
	case "PreToolUse":
		c, err := rt.Begin(req.Task, runtime.CallRequest{ID: p.ID, Capability: p.Tool, Input: p.Input})
		if err == nil && c.Pending {
			err = c.Wait(context.Background())
		}
		if err != nil {
			b, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
				"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": err.Error()}})
			return b
		}
		return []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`)
	case "PostToolUse":
		rt.End(req.Task, p.ID, runtime.OutcomeSucceeded, p.ToolResponse)
	}
	return []byte("{}")
}

// hookClient is the test binary run as a hook: it never fails its agent.
func hookClient(sock string) {
	payload, _ := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	b, _ := json.Marshal(bridgeRequest{Task: os.Getenv(harnexec.EnvTask), Payload: payload})
	if _, err := c.Write(b); err != nil {
		return
	}
	var out bytes.Buffer
	io.Copy(&out, io.LimitReader(c, 1<<20))
	os.Stdout.Write(out.Bytes())
}

func codexDriver(t *testing.T) harnexec.Driver {
	buildFakeAgent(t)
	d, _ := harnexec.Agent("codex", fakeAgent, "exec", "--json")
	return d
}

// zombiesOnly reports whether every process left in group pgid is a zombie
// (dead, waiting for a parent that may never reap it, such as a container's
// first process); false when that cannot be read.
func zombiesOnly(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state ppid pgrp …
		if len(f) > 2 && f[2] == fmt.Sprint(pgid) && f[0] != "Z" {
			return false
		}
	}
	return true
}

// claudeCatalog is Claude Code's tools (its adapter's catalog) as runtime
// capabilities, as the node sets them.
func claudeCatalog(t testing.TB) []runtime.Capability {
	tools, ok := all.Catalog("claude-code")
	if !ok {
		t.Fatal("no claude-code catalog")
	}
	subject := map[adapter.Subject]runtime.Subject{adapter.SubjectCommand: runtime.SubjectCommand,
		adapter.SubjectPath: runtime.SubjectPath, adapter.SubjectText: runtime.SubjectText}
	out := make([]runtime.Capability, 0, len(tools))
	for _, tl := range tools {
		c := runtime.Capability{Name: tl.Name, Kind: runtime.KindTool, Provider: "claude-code", ReadOnly: !tl.Mutates,
			Core: true, Subject: subject[tl.Subject]}
		if strings.HasPrefix(tl.Name, "mcp__") {
			c.Provider = "mcp"
		}
		out = append(out, c)
	}
	return out
}
