package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// harnBin is the binary under test, built once by TestMain.
var harnBin string

// helperEnv switches the test binary into a helper process (see
// runHelper) instead of running tests.
const helperEnv = "HARN_E2E_HELPER"

// Bounds every wait in this package. They bound; they never measure.
const (
	cmdTimeout   = 60 * time.Second // one harn invocation
	readyTimeout = 30 * time.Second // a node answering its socket
	stateTimeout = 20 * time.Second // an asynchronous state change
	pollEvery    = 25 * time.Millisecond
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper())
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if b := os.Getenv("HARN_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: HARN_BIN:", err)
			return 2
		}
		harnBin = abs
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "harn-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	harnBin = filepath.Join(dir, "harn")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Both binaries, side by side: harn finds harnd beside itself.
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", dir+string(filepath.Separator),
		"github.com/harn-dev/harn/cmd/harn", "github.com/harn-dev/harn/cmd/harnd")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: go build:", err)
		return 2
	}
	// And harn-hook beside them, as make build writes it: `harn hook
	// install` then installs it, so the agents' hooks here run it.
	cmd = exec.CommandContext(ctx, goTool, "build", "-o", dir+string(filepath.Separator),
		"github.com/harn-dev/harn/cmd/harn-hook")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: go build harn-hook:", err)
		return 2
	}
	return m.Run()
}

// env is one harn installation: a data dir, a short socket path, a clean
// process environment, and the node processes the test started.
type env struct {
	t       *testing.T
	root    string // t.TempDir()
	dataDir string
	socket  string
	base    []string // environment without HARN_DATA_DIR / HARN_SOCKET

	mu    sync.Mutex
	nodes []*nodeProc
	logs  int
}

// nodeProc is a `harn node` process this test started (its child).
type nodeProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func (n *nodeProc) pid() int { return n.cmd.Process.Pid }

func (n *nodeProc) exited() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	sockDir, err := os.MkdirTemp("", "h")
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: the socket dir goes after the nodes.
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	e := &env{t: t, root: root, dataDir: filepath.Join(root, "data"), socket: filepath.Join(sockDir, "s")}
	if len(e.socket) >= 100 {
		t.Fatalf("socket path %q is too long for a unix socket", e.socket)
	}
	e.base = cleanEnv(root)
	t.Cleanup(e.shutdown)
	return e
}

// cleanEnv is the parent's environment without anything that could steer
// harn (HARN_*, XDG dirs, the agents' session variables), with the XDG
// config and state homes moved into root so that no user config is read.
func cleanEnv(root string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "HARN_"), strings.HasPrefix(k, "XDG_"),
			strings.HasPrefix(k, "CLAUDE"), strings.HasPrefix(k, "CODEX_"),
			strings.HasPrefix(k, "GEMINI_"), strings.HasPrefix(k, "CURSOR_"),
			strings.HasPrefix(k, "GIT_"):
			continue
		}
		out = append(out, kv)
	}
	// Every node of a test picks free ports (tests run side by side) and
	// uses the fast timers of its profiles.
	return append(out,
		"XDG_CONFIG_HOME="+filepath.Join(root, "xdg-config"),
		"XDG_STATE_HOME="+filepath.Join(root, "xdg-state"),
		"HARN_GOSSIP_PORT=0", "HARN_RAFT_PORT=0", "HARN_RPC_PORT=0", "HARN_HTTP_PORT=0",
		"HARN_MESH_PROFILE=local", "HARN_RAFT_PROFILE=fast")
}

// hookEnv is the environment hooks and CLI commands run with.
func (e *env) hookEnv() []string {
	return append(append([]string(nil), e.base...), "HARN_DATA_DIR="+e.dataDir, "HARN_SOCKET="+e.socket)
}

// result is one finished harn process.
type result struct {
	args   []string
	code   int
	stdout string
	stderr string
}

func (r result) String() string {
	return fmt.Sprintf("harn %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// run runs harn with args, stdin and the given environment, bounded by
// cmdTimeout.
func run(t testing.TB, environ []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, harnBin, args...)
	cmd.Env = environ
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A node that a hook starts in the background gets its own files; this
	// only guards against a child that would keep our pipes open.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		t.Fatalf("harn %s: %v (stderr: %s)", strings.Join(args, " "), err, errb.String())
	}
	return r
}

// harn runs a harn command against this env's node.
func (e *env) harn(stdin string, args ...string) result {
	e.t.Helper()
	return run(e.t, e.hookEnv(), stdin, args...)
}

// ok runs a harn command that must exit 0 and returns its stdout.
func (e *env) ok(args ...string) string {
	e.t.Helper()
	r := e.harn("", args...)
	if r.code != 0 {
		e.t.Fatalf("%v", r)
	}
	return r.stdout
}

// hook runs `harn hook <agent> [args...]` with payload on stdin. A hook
// must always exit 0.
func (e *env) hook(agent, payload string, args ...string) result {
	e.t.Helper()
	r := e.harn(payload, append([]string{"hook", agent}, args...)...)
	if r.code != 0 {
		e.t.Fatalf("a hook must exit 0: %v", r)
	}
	return r
}

// startNode starts `harn node` for this env and waits until it answers.
func (e *env) startNode(extra ...string) *nodeProc {
	e.t.Helper()
	n := e.spawnNode(extra...)
	e.waitReady(n)
	return n
}

func (e *env) spawnNode(extra ...string) *nodeProc {
	e.t.Helper()
	args := append([]string{"node", "--data-dir", e.dataDir, "--socket", e.socket, "--reap-interval", "200ms"}, extra...)
	return e.spawn(e.base, args...)
}

// spawn starts harn with args (a node) as our child, logging to a file.
func (e *env) spawn(environ []string, args ...string) *nodeProc {
	e.t.Helper()
	e.mu.Lock()
	e.logs++
	logPath := filepath.Join(e.root, fmt.Sprintf("node-%d.log", e.logs))
	e.mu.Unlock()
	logf, err := os.Create(logPath)
	if err != nil {
		e.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(harnBin, args...)
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	n := &nodeProc{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); close(n.done) }()
	e.mu.Lock()
	e.nodes = append(e.nodes, n)
	e.mu.Unlock()
	return n
}

// waitReady polls `harn node status --json` until the node n answers.
func (e *env) waitReady(n *nodeProc) {
	e.t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for i := 0; time.Now().Before(deadline) && i < 2000; i++ {
		if n.exited() {
			b, _ := os.ReadFile(n.log)
			e.t.Fatalf("harn node exited before answering (code %d): %s", n.cmd.ProcessState.ExitCode(), b)
		}
		if st, ok := e.nodeStatus(); ok && st.PID == n.pid() {
			return
		}
		time.Sleep(pollEvery)
	}
	b, _ := os.ReadFile(n.log)
	e.t.Fatalf("harn node (pid %d) did not answer within %v: %s", n.pid(), readyTimeout, b)
}

// nodeStatusJSON is `harn node status --json`.
type nodeStatusJSON struct {
	Node         string `json:"node"`
	DataDir      string `json:"data_dir"`
	Socket       string `json:"socket"`
	PID          int    `json:"pid"`
	LiveSessions int    `json:"live_sessions"`
	Sessions     int    `json:"sessions"`
}

// nodeStatus asks the node on e.socket; ok is false when none answers.
func (e *env) nodeStatus() (nodeStatusJSON, bool) {
	return statusAt(e.t, e.hookEnv(), e.socket)
}

func statusAt(t testing.TB, environ []string, socket string) (nodeStatusJSON, bool) {
	t.Helper()
	r := run(t, environ, "", "node", "status", "--json", "--socket", socket)
	if r.code != 0 {
		return nodeStatusJSON{}, false
	}
	var st nodeStatusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("node status --json: %v: %s", err, r.stdout)
	}
	return st, true
}

// stopNode stops a node this test started: SIGTERM, then SIGKILL if it
// does not exit in time; it always waits for the process.
func (e *env) stopNode(n *nodeProc) {
	e.t.Helper()
	if n.exited() {
		return
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(15 * time.Second):
		n.cmd.Process.Kill()
		<-n.done
		e.t.Errorf("harn node %d ignored SIGTERM for 15s; killed", n.pid())
	}
}

// kill9 kills a node this test started with SIGKILL and waits for it.
func (e *env) kill9(n *nodeProc) {
	e.t.Helper()
	n.cmd.Process.Kill()
	<-n.done
}

// stopForeignNode stops the node answering on e.socket when it is not one
// of ours (a hook started it in the background): SIGTERM by the pid it
// reports, then waits until its socket is dead and the process is gone.
func (e *env) stopForeignNode() {
	e.t.Helper()
	st, ok := e.nodeStatus()
	if !ok {
		return
	}
	if e.ownNode(st.PID) != nil {
		return
	}
	stopPID(e.t, st.PID, e.socket)
}

func (e *env) ownNode(pid int) *nodeProc {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range e.nodes {
		if n.pid() == pid {
			return n
		}
	}
	return nil
}

// stopPID stops a process that is not our child, by pid: SIGTERM, a
// bounded wait for it to go and its socket to die, then SIGKILL.
func stopPID(t testing.TB, pid int, socket string) {
	t.Helper()
	if pid <= 1 || pid == os.Getpid() {
		t.Fatalf("refusing to signal pid %d", pid)
	}
	syscall.Kill(pid, syscall.SIGTERM)
	if waitGone(pid, socket, 15*time.Second) {
		return
	}
	t.Errorf("harn node %d ignored SIGTERM for 15s; killing it", pid)
	syscall.Kill(pid, syscall.SIGKILL)
	if !waitGone(pid, "", 10*time.Second) {
		t.Errorf("harn node %d survived SIGKILL", pid)
	}
}

func waitGone(pid int, socket string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline) && i < 5000; i++ {
		if !pidAlive(pid) && (socket == "" || socketDead(socket)) {
			return true
		}
		time.Sleep(pollEvery)
	}
	return false
}

// pidAlive reports whether pid runs (a zombie does not).
func pidAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if runtime.GOOS != "linux" {
			return syscall.Kill(pid, 0) == nil
		}
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// socketDead reports whether nothing listens on socket.
func socketDead(socket string) bool {
	c, err := net.DialTimeout("unix", socket, 200*time.Millisecond)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)
	}
	c.Close()
	return false
}

// shutdown stops every node of this env: a foreign one by its pid, ours
// by SIGTERM. It runs as a cleanup.
func (e *env) shutdown() {
	if st, ok := statusQuiet(e.hookEnv(), e.socket); ok && e.ownNode(st.PID) == nil && st.PID > 1 && st.PID != os.Getpid() {
		syscall.Kill(st.PID, syscall.SIGTERM)
		if !waitGone(st.PID, e.socket, 15*time.Second) {
			syscall.Kill(st.PID, syscall.SIGKILL)
			waitGone(st.PID, "", 10*time.Second)
		}
	}
	e.mu.Lock()
	nodes := append([]*nodeProc(nil), e.nodes...)
	e.mu.Unlock()
	for _, n := range nodes {
		if n.exited() {
			continue
		}
		n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.done:
		case <-time.After(15 * time.Second):
			n.cmd.Process.Kill()
			<-n.done
		}
	}
}

// statusQuiet is statusAt for cleanups, where t may be finished.
func statusQuiet(environ []string, socket string) (nodeStatusJSON, bool) {
	if socketDead(socket) {
		return nodeStatusJSON{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, harnBin, "node", "status", "--json", "--socket", socket)
	cmd.Env = environ
	out, err := cmd.Output()
	if err != nil {
		return nodeStatusJSON{}, false
	}
	var st nodeStatusJSON
	if json.Unmarshal(out, &st) != nil {
		return nodeStatusJSON{}, false
	}
	return st, true
}

// eventually polls cond until it holds, bounded in time and count.
func eventually(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for i := 0; i < 100000; i++ {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(pollEvery)
	}
	t.Fatalf("%s: not within %v; last: %s", what, d, last)
}

// sessionJSON is the stable JSON of a session (list, show, heartbeat).
type sessionJSON struct {
	SessionID          string   `json:"session_id"`
	ParentSessionID    string   `json:"parent_session_id"`
	Agent              string   `json:"agent"`
	Name               string   `json:"name"`
	SessionName        string   `json:"session_name"`
	Activity           string   `json:"activity"`
	ActivityUpdatedAt  string   `json:"activity_updated_at"`
	ActivitySource     string   `json:"activity_source"`
	TaskState          string   `json:"task_state"`
	TaskStateUpdatedAt string   `json:"task_state_updated_at"`
	BlockerReason      string   `json:"blocker_reason"`
	Task               string   `json:"task"`
	Claims             []string `json:"claims"`
	Ended              bool     `json:"ended"`
	EndReason          string   `json:"end_reason"`
	AgentPID           int      `json:"agent_pid"`
	Cwd                string   `json:"cwd"`
	Events             int      `json:"events"`
}

// eventJSON is one event of `harn agents trace --json`.
type eventJSON struct {
	ID        string         `json:"id"`
	SessionID string         `json:"session_id"`
	Type      string         `json:"type"`
	TS        string         `json:"ts"`
	Agent     string         `json:"agent"`
	Node      string         `json:"node"`
	Seq       uint64         `json:"seq"`
	Attrs     map[string]any `json:"attrs"`
}

func (e *env) status(id string) sessionJSON {
	e.t.Helper()
	var s sessionJSON
	mustJSON(e.t, e.ok("agents", "status", id, "--json"), &s)
	return s
}

func (e *env) show(id string) sessionJSON {
	e.t.Helper()
	var s sessionJSON
	mustJSON(e.t, e.ok("agents", "show", id, "--json"), &s)
	return s
}

func (e *env) list(all bool) []sessionJSON {
	e.t.Helper()
	args := []string{"agents", "list", "--json"}
	if all {
		args = append(args, "--all")
	}
	var ss []sessionJSON
	mustJSON(e.t, e.ok(args...), &ss)
	return ss
}

func (e *env) trace(id string) []eventJSON {
	e.t.Helper()
	var evs []eventJSON
	mustJSON(e.t, e.ok("agents", "trace", id, "--json"), &evs)
	return evs
}

func mustJSON(t testing.TB, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, s)
	}
}

func inList(ss []sessionJSON, id string) bool {
	for _, s := range ss {
		if s.SessionID == id {
			return true
		}
	}
	return false
}

func types(evs []eventJSON) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func countType(evs []eventJSON, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// heartbeatPath is <data-dir>/active/<id>.json (ids here need no escaping).
func (e *env) heartbeatPath(id string) string {
	return filepath.Join(e.dataDir, "active", id+".json")
}

// spoolPending lists the spool files a node has not drained yet.
func (e *env) spoolPending() []string {
	ents, err := os.ReadDir(filepath.Join(e.dataDir, "spool"))
	if err != nil {
		return nil
	}
	var out []string
	for _, en := range ents {
		if !en.IsDir() && strings.HasSuffix(en.Name(), ".json") && !strings.HasPrefix(en.Name(), ".") {
			out = append(out, en.Name())
		}
	}
	return out
}

// oneLineErr checks that a failed command wrote exactly one line, starting
// "harn: ", to stderr.
func oneLineErr(t testing.TB, r result) {
	t.Helper()
	s := strings.TrimSuffix(r.stderr, "\n")
	if s == "" || strings.Contains(s, "\n") || !strings.HasPrefix(s, "harn: ") {
		t.Errorf("harn %s: want one line `harn: ...` on stderr, got %q", strings.Join(r.args, " "), r.stderr)
	}
}

// use points the env's helpers at a subtest's t; the returned func points
// them back.
func (e *env) use(t *testing.T) func() {
	prev := e.t
	e.t = t
	return func() { e.t = prev }
}

func parseTS(t testing.TB, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("event ts %q: %v", s, err)
	}
	return ts
}
