package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// askLines runs `harn ask --json` in dir and returns its event lines.
func askLines(t *testing.T, e *env, dir string, m *modeltest.Server, extra ...string) (result, []map[string]any) {
	t.Helper()
	args := append([]string{"ask", "--provider-url", m.URL(), "--model", "test-model", "--json"}, extra...)
	r := runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), dir, args...)
	var evs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(l), &ev) == nil {
			evs = append(evs, ev)
		}
	}
	return r, evs
}

// sessionOf is the one session every event names.
func sessionOf(t *testing.T, evs []map[string]any) string {
	t.Helper()
	s := ""
	for _, ev := range evs {
		id, _ := ev["session"].(string)
		if id == "" || (s != "" && id != s) {
			t.Fatalf("an event without the session, or another: %v", ev)
		}
		s = id
	}
	if s == "" {
		t.Fatal("no events")
	}
	return s
}

// wantEnded checks that session is ended (not live) in the roster.
func wantEnded(t *testing.T, e *env, session string) {
	t.Helper()
	var ss []sessionJSON
	mustJSON(t, e.ok("agents", "list", "--all", "--json"), &ss)
	for _, s := range ss {
		if s.SessionID == session {
			if !s.Ended {
				t.Fatalf("session %s is live after harn ask returned: %+v", session, s)
			}
			return
		}
	}
	t.Fatalf("session %s is not in the roster", session)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return string(b)
}

// TestAskSessionKeepsItsGrantsAcrossAsks: harn ask --profile edit opens
// a session (every --json event names it) and ends it as it returns;
// harn ask --session S without --profile opens it again, and its task
// holds the session's grants: its write runs. It ends again.
func TestAskSessionKeepsItsGrantsAcrossAsks(t *testing.T) {
	e := askEnv(t)
	dir := t.TempDir()
	m := modeltest.New(t,
		calls(call("w1", "write", `{"path":"hello.txt","content":"hello one"}`)), modeltest.Text("created hello.txt"),
		calls(call("w2", "write", `{"path":"hello.txt","content":"hello two"}`)), modeltest.Text("created it again"))
	r, evs := askLines(t, e, dir, m, "--profile", "edit", "create a hello file")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	s := sessionOf(t, evs)
	if got := readFile(t, filepath.Join(dir, "hello.txt")); got != "hello one" {
		t.Fatalf("the first write: %q", got)
	}
	wantEnded(t, e, s)

	r = runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), dir, "ask", "--session", s, "create a hello file")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "created it again" {
		t.Fatalf("the second ask: %v", r)
	}
	if got := readFile(t, filepath.Join(dir, "hello.txt")); got != "hello two" {
		t.Fatalf("the second ask's write (the session's edit grants) did not run: %q; %v", got, m.Raw()[len(m.Raw())-1])
	}
	wantEnded(t, e, s)
}

// TestAskSessionKeepsItsGrantsAfterANodeRestart: the session's grants are
// stored with it: after the node restarts, harn ask --session opens it
// again with them.
func TestAskSessionKeepsItsGrantsAfterANodeRestart(t *testing.T) {
	e := newEnv(t)
	environ := append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s")
	n := e.spawn(environ, "node", "--data-dir", e.dataDir, "--socket", e.socket)
	e.waitReady(n)
	dir := t.TempDir()
	m := modeltest.New(t,
		calls(call("w1", "write", `{"path":"a.txt","content":"before"}`)), modeltest.Text("wrote a"),
		calls(call("w2", "write", `{"path":"b.txt","content":"after"}`)), modeltest.Text("wrote b"))
	r, evs := askLines(t, e, dir, m, "--profile", "edit", "write a")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	s := sessionOf(t, evs)
	e.stopNode(n)
	n = e.spawn(environ, "node", "--data-dir", e.dataDir, "--socket", e.socket)
	e.waitReady(n)
	r = runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), dir, "ask", "--session", s, "write b")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "wrote b" {
		t.Fatalf("ask --session after the restart: %v", r)
	}
	if got := readFile(t, filepath.Join(dir, "b.txt")); got != "after" {
		t.Fatalf("after the restart the write did not run: %q", got)
	}
	// the context came back: the reopened task's request carries the first turn
	reqs := m.Requests()
	if !modeltest.Contains(modeltest.Messages(reqs[len(reqs)-2]), "write a") {
		t.Fatalf("the reopened session lost its context: %q", modeltest.Messages(reqs[len(reqs)-2]))
	}
	wantEnded(t, e, s)
}

// TestASessionsGrantsNeverGrow: a task naming grants wider than its
// session's is refused (exit 15) with the line that says why; harn task
// follow-up on an ask's ended session is refused and names what reopens
// it.
func TestASessionsGrantsNeverGrow(t *testing.T) {
	e := askEnv(t)
	dir := t.TempDir()
	m := modeltest.New(t, modeltest.Text("looked"))
	r, evs := askLines(t, e, dir, m, "--profile", "read-only", "look around")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	s := sessionOf(t, evs)
	r = runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), dir, "ask", "--session", s, "--profile", "full", "now run it")
	if r.code != 15 || !strings.Contains(r.stderr, "is beyond what session "+s+" was given") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("a wider profile than the session's: %v", r)
	}
	if n := len(m.Requests()); n != 1 {
		t.Fatalf("the refused ask reached the model: %d requests", n)
	}
	r = e.harn("", "task", "follow-up", "--session", s, "then this")
	if r.code != 15 || !strings.Contains(r.stderr, "has ended; harn ask --session "+s+" TEXT (or the TUI) opens it again") {
		t.Fatalf("a follow-up of an ended ask's session: %v", r)
	}
}

// startAsk runs harn ask in dir in the background; its stderr lines come
// on the channel, and wait returns the finished result.
func startAsk(t *testing.T, e *env, dir string, m *modeltest.Server, extra ...string) (<-chan string, func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	t.Cleanup(cancel)
	args := append([]string{"ask", "--provider-url", m.URL(), "--model", "test-model"}, extra...)
	cmd := exec.CommandContext(ctx, harnBin, args...)
	cmd.Env, cmd.Dir = append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), dir
	var out, all bytes.Buffer
	cmd.Stdout = &out
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	lines := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			lines <- sc.Text()
		}
	}()
	return lines, func() result {
		err := cmd.Wait()
		<-done
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return result{args: args, code: code, stdout: out.String(), stderr: all.String()}
	}
}

var hintCmd = regexp.MustCompile("`(harn [^`]+)`")

// hintsOf waits for the stderr line holding want and returns its hints.
func hintsOf(t *testing.T, lines <-chan string, want string) []string {
	t.Helper()
	deadline := time.After(45 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("harn ask ended before saying %q", want)
			}
			if !strings.Contains(l, want) {
				continue
			}
			var out []string
			for _, m := range hintCmd.FindAllStringSubmatch(l, -1) {
				out = append(out, m[1])
			}
			return out
		case <-deadline:
			t.Fatalf("harn ask did not say %q", want)
		}
	}
}

// TestAskByDefaultAsksBeforeWritingAndItsHintsRunAsPrinted: without a
// profile, harn ask reads freely and waits before a write; on stderr it
// says how to answer: `harn task confirm …`, run as printed, lets the
// write run; `harn task deny …`, run as printed, refuses the next.
func TestAskByDefaultAsksBeforeWritingAndItsHintsRunAsPrinted(t *testing.T) {
	e := askEnv(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o600)
	m := modeltest.New(t,
		calls(call("r1", "read", `{"path":"main.go"}`)),
		calls(call("w1", "write", `{"path":"fix.txt","content":"fixed"}`)), modeltest.Text("fixed the test"),
		calls(call("w2", "write", `{"path":"more.txt","content":"more"}`)), modeltest.Text("could not write more"))
	lines, wait := startAsk(t, e, dir, m, "fix the failing test")
	hints := hintsOf(t, lines, "write waits for your confirmation")
	if len(hints) != 2 || !strings.HasPrefix(hints[0], "harn task confirm ") || !strings.HasPrefix(hints[1], "harn task deny ") {
		t.Fatalf("hints %q", hints)
	}
	if exists(filepath.Join(dir, "fix.txt")) {
		t.Fatal("the write ran before its confirmation")
	}
	if r := runHint(t, e, dir, hints[0]); r.code != 0 {
		t.Fatalf("%s as printed: %v", hints[0], r)
	}
	r := wait()
	if r.code != 0 || strings.TrimSpace(r.stdout) != "fixed the test" || readFile(t, filepath.Join(dir, "fix.txt")) != "fixed" {
		t.Fatalf("after the confirmation: %v", r)
	}
	if !strings.Contains(r.stderr, "--profile edit") {
		t.Fatalf("the hint names no profile that runs without asking: %q", r.stderr)
	}
	// the read ran without a question
	if reqs := m.Requests(); !strings.Contains(toolResults(reqs[1])["r1"], "package main") {
		t.Fatalf("the read under the default profile: %q", toolResults(reqs[1])["r1"])
	}

	lines, wait = startAsk(t, e, dir, m, "write more")
	hints = hintsOf(t, lines, "write waits for your confirmation")
	if r := runHint(t, e, dir, hints[1]); r.code != 0 {
		t.Fatalf("%s as printed: %v", hints[1], r)
	}
	if r := wait(); r.code != 0 || exists(filepath.Join(dir, "more.txt")) {
		t.Fatalf("after the denial: %v", r)
	}
}

// TestATaskWithRefusedCallsSaysSoAndExits19: a task that succeeded with
// refused calls says so: harn ask prints its answer, names the refused
// calls on stderr and exits 19; the hints it prints run as printed, and
// harn task show names them too.
func TestATaskWithRefusedCallsSaysSoAndExits19(t *testing.T) {
	e := askEnv(t)
	dir := t.TempDir()
	m := modeltest.New(t, calls(call("w1", "write", `{"path":"x.txt","content":"x"}`)), modeltest.Text("I could not write"))
	r := askPlain(t, e, dir, m, "--profile", "read-only", "write x")
	if r.code != 19 || strings.TrimSpace(r.stdout) != "I could not write" || !strings.Contains(r.stderr, "refused 1 call: write (grant)") {
		t.Fatalf("%v", r)
	}
	hints := hintCmd.FindAllStringSubmatch(r.stderr, -1)
	if len(hints) != 1 || !strings.HasPrefix(hints[0][1], "harn task show ") {
		t.Fatalf("hints %q", hints)
	}
	show := runHint(t, e, dir, hints[0][1])
	if show.code != 0 || !strings.Contains(show.stdout, "(succeeded)") || !strings.Contains(show.stdout, "refused: 1 call: write (grant)") {
		t.Fatalf("%s: %v", hints[0][1], show)
	}
	if !strings.Contains(r.stderr, "harn profiles lists them") {
		t.Fatalf("no word of harn profiles: %q", r.stderr)
	}
	if p := e.harn("", "profiles"); p.code != 0 || !strings.Contains(p.stdout, "confirm (default)") {
		t.Fatalf("harn profiles: %v", p)
	}
	var tr taskResultJSON
	mustJSON(t, runHint(t, e, dir, hints[0][1]+" --json").stdout, &tr)
}

// TestTaskFollowUpAndSupersedeKeepTheSessionsGrants: harn task follow-up
// and supersede without --profile hold the session's grants.
func TestTaskFollowUpAndSupersedeKeepTheSessionsGrants(t *testing.T) {
	e := askEnv(t)
	dir := t.TempDir()
	m := modeltest.New(t)
	n := 0
	m.SetFallback(func(req map[string]any) modeltest.Reply {
		ms := modeltest.Messages(req)
		if strings.HasPrefix(ms[len(ms)-1], "tool:") {
			return modeltest.Text("done")
		}
		n++
		return calls(call("w"+string(rune('0'+n)), "write", `{"path":"f`+string(rune('0'+n))+`.txt","content":"ok"}`))
	})
	start := e.task("start", "--agent", "harn", "--provider-url", m.URL(), "--model", "test-model", "--profile", "edit",
		"--workdir", dir, "first")
	e.waitTask(start.Task.ID, "succeeded")
	fu := e.task("follow-up", "--session", start.Session, "second")
	e.waitTask(fu.Task.ID, "succeeded")
	sup := e.task("supersede", "--session", start.Session, "third")
	e.waitTask(sup.Task.ID, "succeeded")
	for i := 1; i <= 3; i++ {
		if got := readFile(t, filepath.Join(dir, "f"+string(rune('0'+i))+".txt")); got != "ok" {
			t.Fatalf("task %d's write: %q", i, got)
		}
	}
}

// TestTaskPinLandsAfterTheRunningToolCallAndCompactRuns: a pin sent while
// a shell call runs waits for the step boundary: the next request
// carries it after the tool's result, never between the call and its
// result; harn task compact then compacts the session's context.
func TestTaskPinLandsAfterTheRunningToolCallAndCompactRuns(t *testing.T) {
	e := askEnv(t)
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	m := modeltest.New(t,
		modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell", Args: `{"command":"read line < ` + fifo + `; echo got $line; seq 1 600"}`}),
		modeltest.Text("pinned answer"))
	ch, cmd := askJSON(t, e, modelArgs(m, "--profile", "full", "run the script"))
	pre := waitFor(t, ch, "tool.pre")
	sess := pre["session"].(string)
	out := e.ok("task", "pin", "--session", sess, "the build is make; never go build")
	if !strings.Contains(out, "next step boundary") {
		t.Fatalf("a pin during a tool call: %q", out)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("ready\n")
	w.Close()
	waitFor(t, ch, "turn.end")
	_ = cmd.Wait()
	reqs := m.Requests()
	ms := modeltest.Messages(reqs[1])
	if len(ms) < 2 || ms[len(ms)-1] != "user:the build is make; never go build" || !strings.HasPrefix(ms[len(ms)-2], "tool:got ready") {
		t.Fatalf("the pin is not right after the tool result: %q", ms)
	}
	if modeltest.Contains(modeltest.Messages(reqs[0]), "never go build") {
		t.Fatal("the pin reached the model before the boundary")
	}
	out = e.ok("task", "compact", "--session", sess)
	if !strings.Contains(out, "compacted session "+sess) {
		t.Fatalf("compact: %q", out)
	}
	if ctx := e.ok("context", sess); !strings.Contains(ctx, "archived") || !strings.Contains(ctx, "pinned") {
		t.Fatalf("the context after the compaction:\n%s", ctx)
	}
}

// TestAnAnthropicURLWithV1WorksAndAProviderErrorNamesItsURL: an
// Anthropic base URL given with /v1 reaches /v1/messages; a wrong URL's
// 404 names the URL and the model.
func TestAnAnthropicURLWithV1WorksAndAProviderErrorNamesItsURL(t *testing.T) {
	e := askEnv(t)
	a := modeltest.NewAnthropic(t, modeltest.AText("hi from claude", modeltest.AUsage{Input: 5, Output: 2}))
	r := runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), t.TempDir(), "ask", "--provider", "anthropic",
		"--provider-url", a.URL()+"/v1/", "--model", "claude-test", "hi")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "hi from claude" {
		t.Fatalf("%v", r)
	}
	o := modeltest.New(t)
	wrong := strings.TrimSuffix(o.URL(), "/v1") + "/nowhere"
	r = runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), t.TempDir(), "ask", "--provider-url", wrong, "--model", "gpt-test", "hi")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, wrong+"/chat/completions") || !strings.Contains(r.stdout+r.stderr, "model gpt-test") {
		t.Fatalf("the error does not name the URL and the model: %v", r)
	}
}

// TestAskInterruptedCancelsItsTaskAndEndsItsSession: SIGTERM to harn ask
// while its call waits for a confirmation cancels the task, ends the
// session and exits 130; nothing the call would have written is written.
func TestAskInterruptedCancelsItsTaskAndEndsItsSession(t *testing.T) {
	e := askEnv(t)
	dir := t.TempDir()
	m := modeltest.New(t, calls(call("w1", "write", `{"path":"x.txt","content":"x"}`)), modeltest.Text("never"))
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, harnBin, "ask", "--provider-url", m.URL(), "--model", "test-model", "--json", "write x")
	cmd.Env, cmd.Dir = append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var req map[string]any
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev["type"] == "input.requested" {
			req = ev
			break
		}
	}
	if req == nil {
		t.Fatalf("no input.requested: %s", errb.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	go func() {
		for sc.Scan() {
		}
	}()
	err := cmd.Wait()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 130 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("ask after SIGTERM: %v %s", err, errb.String())
	}
	task, sess := req["task"].(string), req["session"].(string)
	if st := e.waitTask(task, "cancelled"); st.Task.Status != "cancelled" {
		t.Fatalf("the task: %+v", st.Task)
	}
	wantEnded(t, e, sess)
	if exists(filepath.Join(dir, "x.txt")) {
		t.Fatal("the interrupted call wrote")
	}
}

// TestAskEndsItsSessionWhenItsReaderGoes: `harn ask --json | head -1`
// closes ask's stdout early; the write fails instead of killing ask, and
// the session still ends.
func TestAskEndsItsSessionWhenItsReaderGoes(t *testing.T) {
	e := askEnv(t)
	m := modeltest.New(t, modeltest.Text("a long answer"))
	sh := "'" + harnBin + "' ask --provider-url " + m.URL() + " --model test-model --json hi | head -1"
	cmd := exec.Command("sh", "-c", sh)
	cmd.Env, cmd.Dir = append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var ev map[string]any
	if err := json.Unmarshal(out, &ev); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	s, _ := ev["session"].(string)
	eventually(t, stateTimeout, "the session ended", func() (bool, string) {
		var ss []sessionJSON
		mustJSON(t, e.ok("agents", "list", "--all", "--json"), &ss)
		for _, x := range ss {
			if x.SessionID == s {
				return x.Ended, x.Activity
			}
		}
		return false, "not in the roster"
	})
}
