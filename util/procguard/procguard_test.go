package procguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is the guard too (as harnd is), and, with
// PROCGUARD_TEST_PARENT set, a parent that runs one guarded command and
// then waits to be killed.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(Main(os.Args[2:]))
	}
	if cmdline := os.Getenv("PROCGUARD_TEST_PARENT"); cmdline != "" {
		os.Exit(runParent(cmdline, os.Getenv("PROCGUARD_TEST_GUARD") != ""))
	}
	os.Exit(m.Run())
}

func runParent(cmdline string, guarded bool) int {
	guard := ""
	if guarded {
		guard, _ = os.Executable()
	}
	cmd, ready, err := Command(guard, []string{"/bin/sh", "-c", cmdline})
	if err != nil {
		return 1
	}
	done, err := Start(cmd)
	Started(cmd)
	if err != nil {
		return 1
	}
	if ready != nil {
		_, _ = ready.Write([]byte{1})
		_ = ready.Close()
	}
	<-done
	return 0
}

// live reports whether pid runs (not a zombie).
func live(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// waitPID reads the pid a command wrote into f (bounded).
func waitPID(t *testing.T, f string) int {
	t.Helper()
	for range 1000 {
		b, _ := os.ReadFile(f)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no pid written within 10 s")
	return 0
}

// parentWithSleep starts a parent process that runs `sleep 1000` in the
// background of a shell (guarded or not) and returns the parent and the
// sleep's pid.
func parentWithSleep(t *testing.T, guarded bool) (*exec.Cmd, int) {
	t.Helper()
	pidf := filepath.Join(t.TempDir(), "pid")
	self, _ := os.Executable()
	p := exec.Command(self)
	p.Env = append(os.Environ(), "PROCGUARD_TEST_PARENT=sleep 1000 & echo $! > "+pidf+"; wait")
	if guarded {
		p.Env = append(p.Env, "PROCGUARD_TEST_GUARD=1")
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	sleep := waitPID(t, pidf)
	t.Cleanup(func() { _ = syscall.Kill(sleep, syscall.SIGKILL); _ = p.Process.Kill(); _ = p.Wait() })
	return p, sleep
}

// TestAGuardedGroupDiesWithItsParent: a guarded command's background
// process dies when the process that started it is killed with SIGKILL.
// Unguarded, a parent death signal reaches the shell alone and its
// background sleep runs on: the guard is what kills the group.
func TestAGuardedGroupDiesWithItsParent(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	p, sleep := parentWithSleep(t, true)
	if !live(sleep) {
		t.Fatal("the sleep does not run")
	}
	_ = p.Process.Kill()
	_ = p.Wait()
	for i := 0; live(sleep); i++ {
		if i > 500 {
			t.Fatalf("the guarded sleep %d outlived its parent by 5 s", sleep)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAnUnguardedBackgroundProcessOutlivesItsParent is why the guard
// exists: the bare command's parent death signal kills the shell only.
func TestAnUnguardedBackgroundProcessOutlivesItsParent(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	p, sleep := parentWithSleep(t, false)
	_ = p.Process.Kill()
	_ = p.Wait()
	time.Sleep(500 * time.Millisecond) // clock:real the contrast case: it must still run after a while
	if !live(sleep) {
		t.Skip("this shell runs its background job in a way that dies with it; nothing to contrast")
	}
}

// TestTheGuardRunsNothingWithoutTheGoAhead: a guard whose go-ahead pipe
// closes without a byte (the node could not record the group) exits 125
// and never runs the command.
func TestTheGuardRunsNothingWithoutTheGoAhead(t *testing.T) {
	self, _ := os.Executable()
	mark := filepath.Join(t.TempDir(), "ran")
	cmd, ready, err := Command(self, []string{"/bin/sh", "-c", "touch " + mark})
	if err != nil {
		t.Fatal(err)
	}
	done, err := Start(cmd)
	Started(cmd)
	if err != nil {
		t.Fatal(err)
	}
	_ = ready.Close()
	err = <-done
	if exitCode(err) != 125 {
		t.Fatalf("the guard without its go-ahead: %v", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the command ran without the go-ahead")
	}
}

// TestReapKillsWhatADeadRunLeftAndSparesAnotherProcess: a recorded group
// whose leader still runs with the recorded start time is killed; a
// record whose start time differs (the pid is another process's now)
// kills nothing.
func TestReapKillsWhatADeadRunLeftAndSparesAnotherProcess(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	g, err := GroupOf(cmd.Process.Pid)
	if err != nil {
		t.Skipf("no start time on this system: %v", err)
	}
	if Reap(Group{PGID: g.PGID, Start: g.Start + 1}) {
		t.Fatal("a record with another start time killed the process")
	}
	if Reap(g) != true {
		t.Fatal("the recorded group was not killed")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the reaped group's process still runs")
	}
}
