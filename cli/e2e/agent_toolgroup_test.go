package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// TestAShellToolDiesWithItsNodeAndItsStepIsOutcomeUnknown: harn ask runs
// a shell tool whose command leaves `sleep 1000` in the background and
// waits. The node is killed with kill -9: the sleep dies with it (its
// process group's guard kills the group when its parent dies), where it
// used to run on with the step `running` forever. The node started again
// settles the step as outcome_unknown, the task is interrupted, and the
// session awaits `harn task ack`, which lifts the hold. (A harn session
// ends at a restart, so no later task of it runs; the refusal of a held
// session's mutations is TestACallRunningWhenTheNodeDiedIsOutcomeUnknown-
// AndHeldForAck in node/tasks, and TestAnUnknownOutcomeHoldSurvivesAKill9-
// UntilTaskAck here.)
func TestAShellToolDiesWithItsNodeAndItsStepIsOutcomeUnknown(t *testing.T) {
	e := newEnv(t)
	environ := append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s")
	start := func() *nodeProc {
		n := e.spawn(environ, "node", "--data-dir", e.dataDir, "--socket", e.socket)
		e.waitReady(n)
		return n
	}
	n := start()
	pidf := filepath.Join(t.TempDir(), "pid")
	m := modeltest.New(t, modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell",
		Args: `{"command":"sleep 1000 & echo $! > ` + pidf + `; wait"}`}))
	ch, _ := askJSON(t, e, modelArgs(m, "--profile", "full", "sleep long"))
	task := waitFor(t, ch, "tool.pre")["task"].(string)
	sleep := readPID(t, pidf)
	t.Cleanup(func() { _ = syscall.Kill(sleep, syscall.SIGKILL) })
	if !alive(sleep) {
		t.Fatal("the sleep is not running")
	}
	e.kill9(n)
	eventually(t, 10*time.Second, "the shell's sleep dies with its node", func() (bool, string) {
		return !alive(sleep), "pid " + strconv.Itoa(sleep) + " alive"
	})

	n2 := start()
	defer e.stopNode(n2)
	var step map[string]any
	for _, s := range e.stepsOf(task) {
		if s["call"] == "c1" {
			step = s
		}
	}
	if step == nil || step["outcome"] != "outcome_unknown" || step["reason"] != "node_restart" {
		t.Fatalf("the shell step after the restart: %v; want outcome_unknown, node_restart", step)
	}
	r := e.task("show", task)
	if r.View == nil || len(r.View.AwaitingAck) != 1 || r.View.AwaitingAck[0] != task {
		t.Fatalf("after the restart the session awaits ack of %+v; want [%s]", r.View, task)
	}
	if out := e.ok("task", "show", task); !strings.Contains(out, "interrupted (node restart)") {
		t.Fatalf("task show: %s", out)
	}
	e.ok("task", "ack", task)
	if r := e.task("show", task); r.View != nil && len(r.View.AwaitingAck) != 0 {
		t.Fatalf("after the ack the session still awaits %v", r.View.AwaitingAck)
	}
}
