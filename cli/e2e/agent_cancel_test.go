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

// readPID waits (bounded) for a shell to write its pid into f.
func readPID(t *testing.T, f string) int {
	t.Helper()
	var pid int
	eventually(t, 30*time.Second, "the shell writes its pid", func() (bool, string) {
		b, _ := os.ReadFile(f)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0, string(b)
	})
	return pid
}

// groupMembers lists the live (not zombie) processes of process group
// pgid, from /proc.
func groupMembers(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so read
		// after its closing parenthesis.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// pgidOf is the process group of pid, from /proc.
func pgidOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	g, _ := strconv.Atoi(f[2])
	return g
}

// TestAskCancelKillsTheShellsProcessGroup: `harn task cancel` of a turn
// whose shell call runs a background child ends the call as aborted,
// the task as cancelled, and leaves no process of the shell's group.
func TestAskCancelKillsTheShellsProcessGroup(t *testing.T) {
	e := askEnv(t)
	pidf := filepath.Join(t.TempDir(), "pid")
	m := modeltest.New(t, modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell",
		Args: `{"command":"echo $$ > ` + pidf + `; sleep 120 & wait"}`}))
	ch, _ := askJSON(t, e, modelArgs(m, "--profile", "full", "sleep"))
	task := waitFor(t, ch, "tool.pre")["task"].(string)
	pgid := pgidOf(t, readPID(t, pidf)) // the shell's group, led by its guard
	if len(groupMembers(pgid)) < 2 {
		t.Fatalf("group %d: %v; want the shell and its sleep", pgid, groupMembers(pgid))
	}
	e.ok("task", "cancel", task)
	if post := waitFor(t, ch, "tool.post"); post["outcome"] != "aborted" || post["call"] != "c1" {
		t.Fatalf("shell outcome %v", post)
	}
	if end := waitFor(t, ch, "turn.end"); end["status"] != "cancelled" {
		t.Fatalf("end %v", end)
	}
	eventually(t, 10*time.Second, "the shell's process group is gone", func() (bool, string) {
		ms := groupMembers(pgid)
		return len(ms) == 0, strconv.Itoa(len(ms)) + " left"
	})
	if err := syscall.Kill(-pgid, 0); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill -%d: %v", pgid, err)
	}
	if r := e.task("show", task); r.Task.State != "terminal" || r.Task.Status != "cancelled" {
		t.Fatalf("task %+v", r.Task)
	}
}

// TestAskToolThatIgnoresTheCancelIsOutcomeUnknown: a shell that keeps
// running past the grace period (a child that left the shell's group and
// session, holding its output) is settled by the barrier as
// outcome_unknown; the call was mutating, so the session holds later
// mutations until `harn task ack`.
func TestAskToolThatIgnoresTheCancelIsOutcomeUnknown(t *testing.T) {
	e := newEnv(t)
	n := e.spawn(append(append([]string(nil), e.base...), "HARN_TASK_GRACE=1s"), "node", "--data-dir", e.dataDir, "--socket", e.socket)
	e.waitReady(n)
	dir := t.TempDir()
	pidf := filepath.Join(dir, "pid")
	m := modeltest.New(t, modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell",
		Args: `{"command":"trap '' INT TERM; setsid sh -c 'echo $$ > ` + pidf + `; exec sleep 120' & wait"}`}))
	ch, _ := askJSON(t, e, modelArgs(m, "--profile", "full", "hang"))
	task := waitFor(t, ch, "tool.pre")["task"].(string)
	stray := readPID(t, pidf)
	t.Cleanup(func() { _ = syscall.Kill(stray, syscall.SIGKILL) }) // runs before the node stops
	e.ok("task", "cancel", task)
	if post := waitFor(t, ch, "tool.post"); post["outcome"] != "outcome_unknown" {
		t.Fatalf("shell outcome %v", post)
	}
	if end := waitFor(t, ch, "turn.end"); end["status"] != "cancelled" {
		t.Fatalf("end %v", end)
	}
	var r taskResultJSON
	eventually(t, 10*time.Second, "the unknown mutation is held for ack", func() (bool, string) {
		r = e.task("show", task)
		return r.View != nil && len(r.View.AwaitingAck) == 1 && r.View.AwaitingAck[0] == task, r.Task.Status
	})
	if r.Task.Status != "cancelled" {
		t.Fatalf("task %+v", r.Task)
	}
}
