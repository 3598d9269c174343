package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// runQuiet runs harn like run, but is safe off the test goroutine: it
// reports instead of failing.
func runQuiet(environ []string, stdin string, args ...string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, harnBin, args...)
	cmd.Env = environ
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return r, nil
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
		return r, nil
	}
	return r, err
}

// TestKill9WhileEightWritersHook: eight writers run `harn hook
// claude-code` processes while the node is killed with SIGKILL midway.
// Every hook run that exited 0 must be in the ledger exactly once after a
// node is back and the spool is drained.
func TestKill9WhileEightWritersHook(t *testing.T) {
	e := newEnv(t)
	first := e.startNode()
	cwd := t.TempDir()
	environ := e.hookEnv()

	const writers, runs = 8, 25
	killAt := int64(writers * runs / 3)
	var (
		wg       sync.WaitGroup
		finished atomic.Int64
		exited0  [writers]int
		failures = make(chan string, writers*runs)
		reached  = make(chan struct{})
		once     sync.Once
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := fmt.Sprintf("writer-%d-3c9e", w)
			for i := range runs {
				payload := claudePreBash(sid, cwd, fmt.Sprintf("w%d-r%03d", w, i))
				r, err := runQuiet(environ, payload, "hook", "claude-code")
				switch {
				case err != nil:
					failures <- fmt.Sprintf("writer %d run %d: %v", w, i, err)
				case r.code != 0:
					failures <- fmt.Sprintf("writer %d run %d: a hook exited %d: %s", w, i, r.code, r.stderr)
				default:
					exited0[w]++
				}
				if finished.Add(1) >= killAt {
					once.Do(func() { close(reached) })
				}
			}
		}()
	}
	select {
	case <-reached:
	case <-time.After(2 * time.Minute):
		t.Error("writers did not reach the kill point within 2 minutes")
	}
	e.kill9(first)
	killedAfter := finished.Load()
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	t.Logf("node killed after %d of %d hook runs", killedAfter, writers*runs)

	// The hooks that found no node spooled and started one in the
	// background; that node is not ours. Start one only if none answers.
	e.ensureNode()
	eventually(t, stateTimeout, "spool drained", func() (bool, string) {
		p := e.spoolPending()
		return len(p) == 0, fmt.Sprintf("%d files pending", len(p))
	})
	if bad, _ := os.ReadDir(filepath.Join(e.dataDir, "spool", "bad")); len(bad) > 0 {
		t.Errorf("%d spool files were quarantined", len(bad))
	}

	total := 0
	for w := range writers {
		sid := fmt.Sprintf("writer-%d-3c9e", w)
		evs := e.trace(sid)
		digests := map[string]bool{}
		ids := map[string]bool{}
		for _, ev := range evs {
			if ids[ev.ID] {
				t.Errorf("%s: event %s stored twice", sid, ev.ID)
			}
			ids[ev.ID] = true
			if ev.Type == "tool.pre_use" {
				d, _ := ev.Attrs["digest"].(string)
				if digests[d] {
					t.Errorf("%s: one hook run's payload is in the ledger twice (digest %s)", sid, d)
				}
				digests[d] = true
			}
		}
		got := countType(evs, "tool.pre_use")
		if got != exited0[w] || len(evs) != got {
			t.Errorf("%s: %d tool.pre_use events (%d events in all) for %d hook runs that exited 0", sid, got, len(evs), exited0[w])
		}
		total += got
	}
	t.Logf("%d events, none lost, none doubled", total)

	// Hooks that found no node started one in the background, logging to
	// <data-dir>/node.log; racing starters must give up cleanly.
	if b, err := os.ReadFile(filepath.Join(e.dataDir, "node.log")); err == nil {
		log := string(b)
		t.Logf("background starts: %d nodes started, %d found the data dir taken",
			strings.Count(log, "node started"), strings.Count(log, "is locked"))
		for _, bad := range []string{"panic", "level=ERROR", `"level":"ERROR"`, "fatal"} {
			if strings.Contains(log, bad) {
				t.Errorf("node.log has %q:\n%s", bad, log)
			}
		}
	}
	e.stopForeignNode()
}

// ensureNode makes sure a node answers on e.socket: one a hook started, or
// else one of ours. Racing a background start, ours may find the data dir
// taken (exit 7); then the other one answers soon.
func (e *env) ensureNode() {
	e.t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for i := 0; i < 50 && time.Now().Before(deadline); i++ {
		if _, ok := e.nodeStatus(); ok {
			return
		}
		n := e.spawnNode()
		for j := 0; j < 2000 && time.Now().Before(deadline); j++ {
			if st, ok := e.nodeStatus(); ok {
				if st.PID != n.pid() {
					e.stopNode(n)
				}
				return
			}
			if n.exited() {
				break
			}
			time.Sleep(pollEvery)
		}
	}
	e.t.Fatalf("no node answers on %s within %v", e.socket, readyTimeout)
}

// spooled is one spool file as the hook wrote it.
type spooled struct {
	Events []struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		TS   string `json:"ts"`
	} `json:"events"`
}

// TestSpoolAndDrainInOrder: hooks run while no node is up spool their
// events; a node that starts later ingests them in the order they
// happened, and the state they fold to is the one the agent is in.
func TestSpoolAndDrainInOrder(t *testing.T) {
	e := newEnv(t)
	cwd := t.TempDir()
	sid := "spool-5d1e-4e21"
	c := claudeCommon(sid, cwd)
	call := `"tool_name":"Bash","tool_input":{"command":"make release","description":"Release"}`

	// While node.log is a directory, a hook cannot start a node in the
	// background (it cannot open the log), so the node stays down.
	logDir := filepath.Join(e.dataDir, "node.log")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		t.Fatal(err)
	}
	down := []struct{ payload, typ string }{
		{claudeStart(sid, cwd), "session.start"},
		{claudePrompt(sid, cwd), "user_prompt.submit"},
		{`{` + c + `,"hook_event_name":"PreToolUse",` + call + `,"tool_use_id":"toolu_r1"}`, "tool.pre_use"},
		{`{` + c + `,"hook_event_name":"PermissionRequest",` + call + `}`, "interaction.input_requested"},
	}
	for _, d := range down {
		r := e.hook("claude-code", d.payload, "--timeout", "200ms")
		if r.stdout != "" {
			t.Errorf("a spooling hook printed %q", r.stdout)
		}
	}
	// Bad input while the node is down is spooled as a diagnostic.
	if r := e.hook("codex", "{truncated"); r.stdout != "" {
		t.Errorf("a spooling hook printed %q", r.stdout)
	}
	if !socketDead(e.socket) {
		t.Fatal("a node answers although none could start")
	}
	files := e.spoolPending()
	sort.Strings(files)
	if len(files) != len(down)+1 {
		t.Fatalf("want %d spool files, got %v", len(down)+1, files)
	}
	files = files[:len(down)] // the diagnostic was written last
	var spooledIDs []string
	for i, f := range files {
		b, err := os.ReadFile(filepath.Join(e.dataDir, "spool", f))
		if err != nil {
			t.Fatal(err)
		}
		var rec spooled
		mustJSON(t, string(b), &rec)
		if len(rec.Events) != 1 || rec.Events[0].Type != down[i].typ {
			t.Fatalf("spool file %d (%s) holds %+v; want one %s", i, f, rec.Events, down[i].typ)
		}
		spooledIDs = append(spooledIDs, rec.Events[0].ID)
	}
	if err := os.Remove(logDir); err != nil {
		t.Fatal(err)
	}

	// The node drains the spool as it opens, before it serves.
	mine := e.startNode()
	if p := e.spoolPending(); len(p) != 0 {
		t.Errorf("node answers with %d spool files pending", len(p))
	}
	evs := e.trace(sid)
	var gotIDs, gotTypes []string
	for _, ev := range evs {
		gotIDs, gotTypes = append(gotIDs, ev.ID), append(gotTypes, ev.Type)
	}
	if !reflect.DeepEqual(gotIDs, spooledIDs) {
		t.Fatalf("trace ids %v, want the spool's, in file order: %v (types %v)", gotIDs, spooledIDs, gotTypes)
	}
	checkTraceOrder(t, evs)
	if st := e.status(sid); st.Activity != "needs_input" || st.ActivitySource != "interaction.input_requested" {
		t.Fatalf("after the drain: activity %q from %q, want needs_input", st.Activity, st.ActivitySource)
	}
	if out := e.ok("node", "errors", "--json"); !strings.Contains(out, `"hook codex"`) || !strings.Contains(out, "not a JSON object") {
		t.Errorf("the spooled diagnostic is not listed:\n%s", out)
	}

	// Now let a hook find no node and start one itself.
	e.stopNode(mine)
	r := e.hook("claude-code", `{`+c+`,"hook_event_name":"PostToolUse",`+call+`,"tool_response":{"stdout":"ok"},"tool_use_id":"toolu_r1"}`, "--timeout", "200ms")
	if r.stdout != "" {
		t.Errorf("PostToolUse printed %q", r.stdout)
	}
	var bg nodeStatusJSON
	eventually(t, readyTimeout, "the node a hook started answers", func() (bool, string) {
		st, ok := e.nodeStatus()
		bg = st
		return ok, "no answer"
	})
	if bg.PID == mine.pid() || bg.DataDir != e.dataDir {
		t.Fatalf("background node: pid %d (ours was %d), data_dir %q", bg.PID, mine.pid(), bg.DataDir)
	}
	eventually(t, stateTimeout, "the spooled PostToolUse is drained", func() (bool, string) {
		st := e.status(sid)
		return st.Activity == "working" && len(e.spoolPending()) == 0, st.Activity
	})
	e.hook("claude-code", `{`+c+`,"hook_event_name":"Stop","stop_hook_active":false}`)
	if st := e.status(sid); st.Activity != "idle" || st.ActivitySource != "turn.stop" {
		t.Fatalf("after Stop: activity %q from %q", st.Activity, st.ActivitySource)
	}
	evs = e.trace(sid)
	want := []string{"session.start", "user_prompt.submit", "tool.pre_use", "interaction.input_requested",
		"tool.post_use", "interaction.input_resolved", "turn.stop"}
	if got := types(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("trace types\n got %v\nwant %v", got, want)
	}
	checkTraceOrder(t, evs)
	stopPID(t, bg.PID, e.socket)
}

// TestProcessGoneEndsSession: when the agent process behind a session
// dies without a SessionEnd hook (an interrupt, a crash), the node ends
// the session itself with end_reason process_gone.
func TestProcessGoneEndsSession(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	sid, control := "gone-2b7e-4e5f", "control-8a6b"

	// A session whose agent is the test process itself stays live.
	e.hook("claude-code", claudeStart(control, cwd))

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(self)
	helper.Env = append(e.hookEnv(), helperEnv+"="+helperHookParent, helperBinEnv+"="+harnBin,
		helperPayloadEnv+"="+claudeStart(sid, cwd)+"\n"+claudePrompt(sid, cwd))
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	helperDone := make(chan struct{})
	var waitOnce sync.Once
	reap := func() {
		waitOnce.Do(func() {
			go func() { helper.Wait(); close(helperDone) }()
		})
	}
	t.Cleanup(func() {
		helper.Process.Kill()
		reap()
		<-helperDone
	})
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- strings.TrimSpace(line) == "ready"
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("helper failed to run its hooks")
		}
	case <-time.After(cmdTimeout):
		t.Fatal("helper did not report ready")
	}

	st := e.show(sid)
	if st.AgentPID != helper.Process.Pid {
		t.Fatalf("the session's agent pid is %d, want the helper %d (the hook's nearest non-shell ancestor)", st.AgentPID, helper.Process.Pid)
	}
	if st.Activity != "working" || st.Ended {
		t.Fatalf("before the kill: activity %q ended %v", st.Activity, st.Ended)
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	reap()
	<-helperDone

	eventually(t, stateTimeout, "session ended as process_gone", func() (bool, string) {
		s := e.show(sid)
		return s.Ended && s.EndReason == "process_gone", fmt.Sprintf("ended %v reason %q", s.Ended, s.EndReason)
	})
	st = e.show(sid)
	if st.Activity != "idle" {
		t.Errorf("ended session activity %q, want idle", st.Activity)
	}
	if inList(e.list(false), sid) {
		t.Error("the ended session is still in `agents list`")
	}
	if !inList(e.list(false), control) {
		t.Error("the control session, whose agent lives, was ended too")
	}
	if !inList(e.list(true), sid) {
		t.Error("the ended session is missing from `agents list --all`")
	}
	evs := e.trace(sid)
	last := evs[len(evs)-1]
	if last.Type != "session.end" || last.Attrs["reason"] != "process_gone" {
		t.Errorf("last event %s %v; want session.end reason process_gone", last.Type, last.Attrs)
	}
	eventually(t, stateTimeout, "heartbeat removed", func() (bool, string) {
		_, err := os.Stat(e.heartbeatPath(sid))
		return errors.Is(err, os.ErrNotExist), "still there"
	})
	if hb := e.waitHeartbeat(control, "idle", "session.start"); hb["ended"] != false {
		t.Errorf("the control session's heartbeat: %v", hb)
	}
}
