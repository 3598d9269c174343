package exec_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harn-dev/harn/runtime"
	harnexec "github.com/harn-dev/harn/runtime/exec"
)

func TestStartRunsAgentToFirstOutputAndSuccess(t *testing.T) {
	f := newFixture(t, withRealClock())
	id := f.start("hello")
	r := f.end()
	if r.Task != id || r.Status != runtime.StatusSucceeded || r.ExitCode != 0 || r.Err != nil {
		t.Fatalf("result %+v, want %s succeeded with exit 0", r, id)
	}
	if v := f.task(id); v.State != runtime.StateTerminal || v.Status != runtime.StatusSucceeded {
		t.Fatalf("task %s/%s, want terminal/succeeded", v.State, v.Status)
	}
	if got := f.texts(id); !contains(got, "echo: hello") || r.Final != "done: hello" {
		t.Fatalf("messages %q, final %q", got, r.Final)
	}
	f.mu.Lock()
	firsts := append([]harnexec.FirstByte(nil), f.firsts...)
	f.mu.Unlock()
	if len(firsts) != 1 || firsts[0].Task != id || firsts[0].Since <= 0 || r.FirstByte != firsts[0].Since {
		t.Fatalf("first byte %+v, result %v", firsts, r.FirstByte)
	}
	starts := f.startsSeen()
	if len(starts) != 1 {
		t.Fatalf("starts %+v", starts)
	}
	f.groupGone(starts[0].PID)
}

func TestGenericDriverTranscriptAndExitStatus(t *testing.T) {
	f := newFixture(t, withRealClock(), withDriver(harnexec.Generic("/bin/sh", "-c", `read x; echo "got:$x"; echo bye`)))
	id := f.start("hi")
	r := f.end()
	if r.Status != runtime.StatusSucceeded || r.Final != "bye" || !contains(f.texts(id), "got:hi") {
		t.Fatalf("result %+v, messages %q", r, f.texts(id))
	}

	f2 := newFixture(t, withRealClock(), withDriver(harnexec.Generic("/bin/sh", "-c", `echo oops >&2; exit 4`)))
	id = f2.start("x")
	r = f2.end()
	if r.Status != runtime.StatusFailed || r.ExitCode != 4 || !strings.Contains(r.Final, "status 4") || !strings.Contains(r.Final, "oops") {
		t.Fatalf("result %+v", r)
	}
	if v := f2.task(id); v.Status != runtime.StatusFailed {
		t.Fatalf("task status %s, want failed", v.Status)
	}
}

func TestFailedTurnEndsFailed(t *testing.T) {
	f := newFixture(t)
	id := f.start("please fail")
	r := f.end()
	if r.Status != runtime.StatusFailed || r.ExitCode != 3 || !strings.HasPrefix(r.Final, "failed:") {
		t.Fatalf("result %+v", r)
	}
	if v := f.task(id); v.Status != runtime.StatusFailed {
		t.Fatalf("task status %s", v.Status)
	}
}

func TestMissingCommandFailsTheTask(t *testing.T) {
	f := newFixture(t, withDriver(harnexec.Generic(filepath.Join(t.TempDir(), "no-such-agent"))))
	id := f.start("x")
	r := f.end()
	if !errors.Is(r.Err, harnexec.ErrStart) || r.Status != runtime.StatusFailed {
		t.Fatalf("result %+v", r)
	}
	if v := f.task(id); v.State != runtime.StateTerminal || v.Status != runtime.StatusFailed {
		t.Fatalf("task %s/%s", v.State, v.Status)
	}
}

func TestSteerReachesAgentThroughStreamJSON(t *testing.T) {
	f := newFixture(t)
	id := f.start("first await-steer")
	res, err := f.ex.Steer("second")
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != harnexec.SteerDelivered || res.Task != id {
		t.Fatalf("steer result %+v", res)
	}
	r := f.end()
	if r.Status != runtime.StatusSucceeded {
		t.Fatalf("result %+v", r)
	}
	if got := f.texts(id); !contains(got, "echo: second") || r.Final != "done: second" {
		t.Fatalf("messages %q, final %q: the steer did not reach the agent", got, r.Final)
	}
}

func TestSteerWithoutStreamingInputBecomesFollowUp(t *testing.T) {
	f := newFixture(t, withDriver(codexDriver(t)))
	gate := filepath.Join(t.TempDir(), "gate")
	id := f.start("first wait-file=" + gate)
	res, err := f.ex.Steer("second")
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != harnexec.SteerFollowUp || res.Task == id || res.Steered != id ||
		res.Message != "steer queued as follow-up: this driver has no streaming input" {
		t.Fatalf("steer result %+v", res)
	}
	if v := f.task(res.Task); v.Action != runtime.ActionFollowUp || v.State != runtime.StateQueued {
		t.Fatalf("follow-up %+v", v)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.end(); r.Task != id || r.Status != runtime.StatusSucceeded {
		t.Fatalf("first %+v", r)
	}
	r := f.end()
	if r.Task != res.Task || r.Status != runtime.StatusSucceeded || !contains(f.texts(res.Task), "second") {
		t.Fatalf("follow-up %+v, messages %q", r, f.texts(res.Task))
	}
	// The follow-up got the handoff: the predecessor's final message.
	if !contains(f.texts(res.Task), "<harn-handoff>") {
		t.Fatalf("follow-up messages %q lack the handoff", f.texts(res.Task))
	}
	if _, err := f.ex.Steer("third"); !errors.Is(err, runtime.ErrNoActiveTask) {
		t.Fatalf("steer with no task: %v, want ErrNoActiveTask", err)
	}
}

func TestRuntimeSteerOnNonStreamingDriverIsQueuedAndReported(t *testing.T) {
	f := newFixture(t, withDriver(codexDriver(t)))
	gate := filepath.Join(t.TempDir(), "gate")
	id := f.start("first wait-file=" + gate)
	if _, err := f.rt.Steer(testSession, "second"); err != nil { // not through the executor
		t.Fatal(err)
	}
	f.waitFor("the steer to be reported", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.steers) == 1 })
	f.mu.Lock()
	s := f.steers[0]
	f.mu.Unlock()
	if s.Mode != harnexec.SteerFollowUp || s.Steered != id || !strings.Contains(s.Message, harnexec.ReasonNoStreaming) {
		t.Fatalf("reported %+v", s)
	}
	os.WriteFile(gate, nil, 0o644)
	f.end()
	if r := f.end(); r.Task != s.Task || r.Status != runtime.StatusSucceeded {
		t.Fatalf("follow-up %+v", r)
	}
}

func TestCancelSendsSIGINTAndAgentThatHonoursItEndsCancelled(t *testing.T) {
	f := newFixture(t)
	id := f.start("hang")
	f.waitFor("first output", func() bool { return f.firstBytes() == 1 })
	if _, err := f.rt.Cancel(id, "op", ""); err != nil {
		t.Fatal(err)
	}
	r := f.end() // the fake clock never moved: SIGINT alone ended it
	if r.Status != runtime.StatusCancelled || !r.Interrupted || r.Killed {
		t.Fatalf("result %+v, want cancelled by SIGINT without SIGKILL", r)
	}
	if !f.marked("cleanup") {
		t.Fatal("the agent did not run its SIGINT cleanup")
	}
	if v := f.task(id); v.State != runtime.StateTerminal || v.Status != runtime.StatusCancelled {
		t.Fatalf("task %s/%s, want terminal/cancelled", v.State, v.Status)
	}
	if n := f.clk.Waiters(); n != 0 {
		t.Fatalf("%d grace timers still armed", n)
	}
	f.groupGone(f.startsSeen()[0].PID)
}

func TestCancelOfAgentIgnoringSIGINTKillsItAfterGrace(t *testing.T) {
	f := newFixture(t)
	id := f.start("ignore-sigint hang")
	f.waitFor("first output", func() bool { return f.firstBytes() == 1 })
	if _, err := f.rt.Cancel(id, "op", ""); err != nil {
		t.Fatal(err)
	}
	f.waitFor("SIGINT to be ignored", func() bool { return f.marked("sigint-ignored") })
	pid := f.startsSeen()[0].PID
	// Before the grace period: the agent still runs, nothing has ended,
	// the barrier holds the task in cancelling.
	if !harnexec.GroupAlive(pid) {
		t.Fatal("the agent died before the grace period")
	}
	select {
	case r := <-f.ends:
		t.Fatalf("task ended before the grace period: %+v", r)
	default:
	}
	if v := f.task(id); v.State != runtime.StateCancelling {
		t.Fatalf("task %s before grace, want cancelling", v.State)
	}
	f.waitFor("both grace timers", func() bool { return f.clk.Waiters() == 2 })
	f.clk.Advance(testGrace)
	r := f.end()
	if r.Status != runtime.StatusCancelled || !r.Interrupted || !r.Killed || r.Signal != "killed" {
		t.Fatalf("result %+v, want cancelled by SIGKILL", r)
	}
	if v := f.task(id); v.State != runtime.StateTerminal || v.Status != runtime.StatusCancelled {
		t.Fatalf("task %s/%s: the barrier did not complete", v.State, v.Status)
	}
	f.groupGone(pid)
}

func TestSupersedeStartsReplacementOnlyAfterOldProcessIsGone(t *testing.T) {
	f := newFixture(t)
	oldAlive := make(chan bool, 1)
	f.mu.Lock()
	f.onStart = func(s harnexec.Started) {
		if starts := f.startsSeen(); len(starts) == 2 {
			oldAlive <- harnexec.GroupAlive(starts[0].PID)
		}
	}
	f.mu.Unlock()
	old := f.start("ignore-sigint hang")
	f.waitFor("first output", func() bool { return f.firstBytes() == 1 })
	v, err := f.rt.Supersede(testSession, runtime.Request{Text: "replacement"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitFor("SIGINT to be ignored", func() bool { return f.marked("sigint-ignored") })
	if n := len(f.startsSeen()); n != 1 {
		t.Fatalf("%d processes started before the old one was gone", n)
	}
	f.waitFor("both grace timers", func() bool { return f.clk.Waiters() == 2 })
	f.clk.Advance(testGrace)
	if r := f.end(); r.Task != old || !r.Killed {
		t.Fatalf("old %+v", r)
	}
	r := f.end()
	if r.Task != v.ID || r.Status != runtime.StatusSucceeded {
		t.Fatalf("replacement %+v", r)
	}
	if alive := <-oldAlive; alive {
		t.Fatal("the replacement started while the old process group was alive")
	}
	if ov := f.task(old); ov.Status != runtime.StatusSuperseded {
		t.Fatalf("old status %s, want superseded", ov.Status)
	}
}

func TestHungMutatingCallEndsUnknownAndNextMutationWaitsForAck(t *testing.T) {
	f := newFixture(t, withHook())
	first := filepath.Join(f.dir, "first.txt")
	second := filepath.Join(f.dir, "second.txt")
	t1 := f.start("ignore-sigint mutate-hang=" + first)
	f.waitFor("the mutation", func() bool { _, err := os.Stat(first); return err == nil })
	if n := len(f.records(t1, runtime.RecBegin)); n != 1 {
		t.Fatalf("%d call.begin records, want the hook's 1", n)
	}
	if _, err := f.rt.Cancel(t1, "op", ""); err != nil {
		t.Fatal(err)
	}
	f.waitFor("SIGINT to be ignored", func() bool { return f.marked("sigint-ignored") })
	f.waitFor("both grace timers", func() bool { return f.clk.Waiters() == 2 })
	f.clk.Advance(testGrace)
	if r := f.end(); !r.Killed || r.Status != runtime.StatusCancelled {
		t.Fatalf("first task %+v", r)
	}
	ends := f.records(t1, runtime.RecEnd)
	if len(ends) != 1 || ends[0].Status != string(runtime.OutcomeUnknown) {
		t.Fatalf("call.end records %+v, want one outcome_unknown", ends)
	}
	if sv, _ := f.rt.Session(testSession); len(sv.AwaitingAck) != 1 || sv.AwaitingAck[0] != t1 {
		t.Fatalf("awaiting ack %v", sv.AwaitingAck)
	}

	// The successor may read, but its mutation is refused until the ack.
	t2 := f.start("mutate=" + second + " read=" + first)
	if r := f.end(); r.Status != runtime.StatusSucceeded {
		t.Fatalf("second task %+v", r)
	}
	if _, err := os.Stat(second); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the mutation ran before the ack: %v", err)
	}
	refused := f.records(t2, runtime.RecRefused)
	if len(refused) != 1 || refused[0].Status != string(runtime.CheckAck) {
		t.Fatalf("refusals %+v, want one on the ack check", refused)
	}
	if got := f.texts(t2); !contains(got, "denied Write") || !contains(got, "Read: read 8 bytes") {
		t.Fatalf("second task messages %q", got)
	}

	if err := f.rt.Ack(t1, "op"); err != nil {
		t.Fatal(err)
	}
	f.start("mutate=" + second)
	if r := f.end(); r.Status != runtime.StatusSucceeded {
		t.Fatalf("third task %+v", r)
	}
	if _, err := os.Stat(second); err != nil {
		t.Fatalf("the mutation after the ack did not run: %v", err)
	}
}

func TestOpenCallOfAgentStoppedBySIGINTIsAcknowledged(t *testing.T) {
	f := newFixture(t, withHook())
	file := filepath.Join(f.dir, "f.txt")
	id := f.start("mutate-hang=" + file)
	f.waitFor("the mutation", func() bool { _, err := os.Stat(file); return err == nil })
	if _, err := f.rt.Cancel(id, "op", ""); err != nil {
		t.Fatal(err)
	}
	if r := f.end(); r.Killed || r.Status != runtime.StatusCancelled {
		t.Fatalf("result %+v", r)
	}
	ends := f.records(id, runtime.RecEnd)
	if len(ends) != 1 || ends[0].Status != string(runtime.OutcomeAborted) {
		t.Fatalf("call.end records %+v, want one aborted", ends)
	}
	if v := f.task(id); v.State != runtime.StateTerminal {
		t.Fatalf("task %s", v.State)
	}
	if sv, _ := f.rt.Session(testSession); len(sv.AwaitingAck) != 0 {
		t.Fatalf("awaiting ack %v after an acknowledged abort", sv.AwaitingAck)
	}
}

func TestAgentEnvironmentNamesSessionAndTask(t *testing.T) {
	f := newFixture(t, withRealClock(), withDriver(harnexec.Generic("/bin/sh", "-c", `echo "$HARN_SESSION/$HARN_TASK"`)))
	id := f.start("x")
	if r := f.end(); r.Final != testSession+"/"+id {
		t.Fatalf("final %q, want %s/%s", r.Final, testSession, id)
	}
}

func TestStoppingTheExecutorStopsTheAgentAndFailsTheTask(t *testing.T) {
	f := newFixture(t)
	id := f.start("hang")
	f.waitFor("first output", func() bool { return f.firstBytes() == 1 })
	f.stop()
	r := f.end()
	if r.Status != runtime.StatusFailed || !r.Interrupted || !strings.Contains(r.Final, "executor stopped") {
		t.Fatalf("result %+v", r)
	}
	if v := f.task(id); v.State != runtime.StateTerminal || v.Status != runtime.StatusFailed {
		t.Fatalf("task %s/%s", v.State, v.Status)
	}
	f.groupGone(f.startsSeen()[0].PID)
}

func TestConcurrentSteersAllReachTheStreamingAgent(t *testing.T) {
	f := newFixture(t)
	id := f.start("first await-steer")
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := f.ex.Steer("steer-" + string(rune('a'+i)))
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if r := f.end(); r.Status != runtime.StatusSucceeded {
		t.Fatalf("result %+v", r)
	}
	got := f.texts(id)
	for i := range 4 {
		if s := "echo: steer-" + string(rune('a'+i)); !contains(got, s) {
			t.Errorf("messages lack %q: %q", s, got)
		}
	}
}

func TestNoChildProcessOutlivesItsTask(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	// The agent leaves a background child holding its stdout and exits.
	f := newFixture(t, withRealClock(), withDriver(harnexec.Generic("/bin/sh", "-c", `sleep 300 & echo "$!"`)))
	f.start("x")
	r := f.end()
	if r.Status != runtime.StatusSucceeded {
		t.Fatalf("result %+v", r)
	}
	child, err := strconv.Atoi(r.Final)
	if err != nil {
		t.Fatalf("final %q is not the child's pid", r.Final)
	}
	f.waitFor("the background child to die", func() bool { return !running(child) })
	f.groupGone(f.startsSeen()[0].PID)
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestAgentEnvironmentHoldsNoHarnSecret: a launcher's agent gets the
// node's environment without harn's own secrets (the provider key, its
// file, the board token) and keeps its own keys.
func TestAgentEnvironmentHoldsNoHarnSecret(t *testing.T) {
	t.Setenv("HARN_PROVIDER_KEY", "sk-node")
	t.Setenv("HARN_PROVIDER_KEY_FILE", "/k")
	t.Setenv("HARN_HTTP_TOKEN", "board")
	t.Setenv("ANTHROPIC_API_KEY", "agent-own")
	f := newFixture(t, withRealClock(), withDriver(harnexec.Generic("/bin/sh", "-c",
		`echo "[$HARN_PROVIDER_KEY|$HARN_PROVIDER_KEY_FILE|$HARN_HTTP_TOKEN|$ANTHROPIC_API_KEY]"`)))
	f.start("x")
	if r := f.end(); r.Final != "[|||agent-own]" {
		t.Fatalf("the agent's environment: %q, want only its own key", r.Final)
	}
}
