//go:build linux

package procinfo

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStatCommWithParens(t *testing.T) {
	rest := "S 7 7 7 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10"
	for _, comm := range []string{"a) (b", "x", "a b", "((", "))", ") (", "))) ((("} {
		line := "42 (" + comm + ") " + rest + "\n"
		p, state, err := parseStat("test", 42, []byte(line))
		if err != nil {
			t.Fatalf("comm %q: %v", comm, err)
		}
		want := Proc{PID: 42, Start: 987654, Comm: comm, PPID: 7}
		if p != want || state != 'S' {
			t.Fatalf("comm %q: got %+v state %c, want %+v state S", comm, p, state, want)
		}
	}
}

func TestParseStatRejectsMalformed(t *testing.T) {
	for _, line := range []string{
		"",
		"42 no comm S 1",
		"42 (x) S 1 2 3",
		"43 (x) S 7 7 7 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000",
		"42 (x) S zz 7 7 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000",
		"42 (x) S 7 7 7 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 -5 1000",
	} {
		var pe *ParseError
		if _, _, err := parseStat("test", 42, []byte(line)); !errors.As(err, &pe) {
			t.Fatalf("%q: err = %v; want *ParseError", line, err)
		}
	}
}

func TestSelf(t *testing.T) {
	p, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != os.Getpid() {
		t.Fatalf("Self().PID = %d, want %d", p.PID, os.Getpid())
	}
	if p.Start == 0 {
		t.Fatal("Self().Start = 0")
	}
	if p.PPID != os.Getppid() {
		t.Fatalf("Self().PPID = %d, want %d", p.PPID, os.Getppid())
	}
	if p.Comm == "" {
		t.Fatal("Self().Comm is empty")
	}
	if !Alive(p) {
		t.Fatal("Alive(Self()) = false")
	}
}

func TestAliveRejectsStaleStart(t *testing.T) {
	p, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	stale := p
	stale.Start = p.Start + 1
	if Alive(stale) {
		t.Fatal("Alive with a different start time = true")
	}
	unknown := p
	unknown.Start = 0
	if !Alive(unknown) {
		t.Fatal("Alive with unknown start time = false")
	}
}

func TestAncestryOfSelf(t *testing.T) {
	chain, err := Ancestry(os.Getpid(), 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) < 2 || chain[0].PID != os.Getpid() || chain[1].PID != os.Getppid() {
		t.Fatalf("Ancestry = %v", chain)
	}
	for i := 1; i < len(chain); i++ {
		if chain[i-1].PPID != chain[i].PID {
			t.Fatalf("Ancestry broken at %d: %v", i, chain)
		}
	}
	// The walk ends at pid 1, at the bound, or (for a process whose parent
	// lies outside its pid namespace) at PPID 0.
	if last := chain[len(chain)-1]; last.PID != 1 && len(chain) != 64 && last.PPID != 0 {
		t.Fatalf("Ancestry ends at %v", last)
	}
	if one, err := Ancestry(os.Getpid(), 1); err != nil || len(one) != 1 {
		t.Fatalf("Ancestry(self, 1) = %v, %v", one, err)
	}
}

func TestLookupWaitedChildNotFound(t *testing.T) {
	sh := needShell(t)
	cmd := exec.Command(sh, "-c", "exit 0")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if p, err := Lookup(pid); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup(waited child %d) = %v, %v; want ErrNotFound", pid, p, err)
	}
	if Alive(Proc{PID: pid}) {
		t.Fatal("Alive(waited child) = true")
	}
}

func TestZombieIsGone(t *testing.T) {
	self := testBinary(t)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"=sleep")
	pid := startHelper(t, cmd)
	p, err := Lookup(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(p) {
		t.Fatal("Alive(running helper) = false")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not yet waited: the helper is a zombie once the kill lands.
	deadline := time.Now().Add(5 * time.Second)
	for Alive(p) {
		if time.Now().After(deadline) {
			t.Fatal("killed, unwaited helper still alive after 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := Lookup(pid); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup(zombie) err = %v; want ErrNotFound", err)
	}
}

func TestCommWithParensFromRealProcess(t *testing.T) {
	self := testBinary(t)
	link := filepath.Join(t.TempDir(), "a) (b")
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link)
	cmd.Env = append(os.Environ(), helperEnv+"=sleep")
	pid := startHelper(t, cmd)
	p, err := Lookup(pid)
	if err != nil {
		t.Fatal(err)
	}
	if p.Comm != "a) (b" || p.PPID != os.Getpid() || p.Start == 0 {
		t.Fatalf("Lookup = %+v; want comm %q, ppid %d", p, "a) (b", os.Getpid())
	}
}

func TestAgentOfSkipsRealShell(t *testing.T) {
	sh := needShell(t)
	self := testBinary(t)
	me, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		script string
		chain  []string // comms from the helper's parent upward, below the test
		needs  string
	}{
		// "; true" keeps the shell from exec'ing the helper in its place.
		{"sh", `"$0"; true`, []string{"sh"}, ""},
		{"sh timeout", `timeout 60 "$0"; true`, []string{"timeout", "sh"}, "timeout"},
		{"sh sh", `"$1" -c '"$0"; true' "$0"; true`, []string{"sh", "sh"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needs != "" {
				if _, err := exec.LookPath(tc.needs); err != nil {
					t.Skipf("%s not on PATH", tc.needs)
				}
			}
			cmd := exec.Command(sh, "-c", tc.script, self, sh)
			cmd.Env = append(os.Environ(), helperEnv+"=sleep")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			pid := startHelper(t, cmd)

			chain, err := Ancestry(pid, len(tc.chain)+2)
			if err != nil {
				t.Fatal(err)
			}
			if len(chain) != len(tc.chain)+2 {
				t.Fatalf("ancestry %v too short", chain)
			}
			for i, comm := range tc.chain {
				if chain[i+1].Comm != comm {
					t.Fatalf("ancestor %d is %v, want %s (chain %v)", i+1, chain[i+1], comm, chain)
				}
			}
			if chain[len(chain)-1] != me {
				t.Fatalf("chain top %v, want the test process %v", chain[len(chain)-1], me)
			}

			got, err := AgentOf(pid)
			if err != nil {
				t.Fatal(err)
			}
			if got != me {
				t.Fatalf("AgentOf(%d) = %v, want the test process %v", pid, got, me)
			}
			if !Alive(got) {
				t.Fatal("Alive(AgentOf) = false")
			}
		})
	}
}

func needShell(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("sh not on PATH")
	}
	return sh
}

func testBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// startHelper starts cmd, whose tree eventually runs the helper; it returns
// the pid the helper prints. Cleanup kills the helper, cmd and (when cmd
// leads a process group) the group, then waits for cmd.
func startHelper(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	helper := 0
	t.Cleanup(func() {
		if helper > 0 {
			_ = syscall.Kill(helper, syscall.SIGKILL)
		}
		if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() { // ends when the line arrives or the pipe closes (cleanup kills the tree)
		line, err := bufio.NewReader(out).ReadString('\n')
		done <- result{line, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("reading helper pid: %v", r.err)
		}
		helper, err = strconv.Atoi(strings.TrimSpace(r.line))
		if err != nil {
			t.Fatalf("helper printed %q", r.line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("helper did not report its pid within 10s")
	}
	return helper
}

// TestAgentOfSelfIsAgentOf: AgentOfSelf, which takes its parent from
// getppid, finds what AgentOf(os.Getpid()) finds, and readStat reads what
// os.ReadFile does.
func TestAgentOfSelfIsAgentOf(t *testing.T) {
	a, errA := AgentOf(os.Getpid())
	b, errB := AgentOfSelf()
	if a != b || (errA == nil) != (errB == nil) {
		t.Fatalf("AgentOf %+v %v, AgentOfSelf %+v %v", a, errA, b, errB)
	}
	path := "/proc/" + strconv.Itoa(os.Getpid()) + "/stat"
	got, err := readStat(path)
	want, _ := os.ReadFile(path)
	if err != nil || string(got[:bytes.IndexByte(got, ')')]) != string(want[:bytes.IndexByte(want, ')')]) {
		t.Fatalf("readStat %q %v, want %q", got, err, want)
	}
	if _, err := readStat("/proc/0/stat"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing pid: %v", err)
	}
}
