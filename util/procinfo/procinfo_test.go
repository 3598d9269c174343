package procinfo

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a long-running helper process
// instead of running tests: it prints its pid and sleeps (bounded).
const helperEnv = "HARN_PROCINFO_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "sleep" {
		fmt.Println(os.Getpid())
		time.Sleep(60 * time.Second)
		return
	}
	m.Run()
}

// table is a fake process table for the pure walkers.
type table map[int]Proc

func (tb table) look(pid int) (Proc, error) {
	p, ok := tb[pid]
	if !ok {
		return Proc{}, fmt.Errorf("pid %d: %w", pid, ErrNotFound)
	}
	return p, nil
}

func TestAgentOfSkipsWrappers(t *testing.T) {
	tb := table{
		1:   {PID: 1, Comm: "systemd", PPID: 0},
		100: {PID: 100, Comm: "claude", PPID: 1, Start: 7},
		101: {PID: 101, Comm: "bash", PPID: 100},
		102: {PID: 102, Comm: "env", PPID: 101},
		103: {PID: 103, Comm: "sh", PPID: 102},
		104: {PID: 104, Comm: "harn", PPID: 103},
	}
	got, err := agentOf(104, tb.look)
	if err != nil {
		t.Fatal(err)
	}
	if got != tb[100] {
		t.Fatalf("AgentOf = %v, want %v", got, tb[100])
	}
	// pid itself is excluded even when it is not a wrapper.
	tb[105] = Proc{PID: 105, Comm: "node", PPID: 104}
	if got, err := agentOf(105, tb.look); err != nil || got.PID != 100 {
		t.Fatalf("AgentOf(105) = %v, %v; want pid 100", got, err)
	}
}

func TestAgentOfNeverReturnsInit(t *testing.T) {
	tb := table{
		1:  {PID: 1, Comm: "init"},
		10: {PID: 10, Comm: "sh", PPID: 1},
		11: {PID: 11, Comm: "harn", PPID: 10},
	}
	if got, err := agentOf(11, tb.look); !errors.Is(err, ErrNotFound) {
		t.Fatalf("AgentOf = %v, %v; want ErrNotFound", got, err)
	}
	if got, err := agentOf(10, tb.look); !errors.Is(err, ErrNotFound) {
		t.Fatalf("AgentOf(child of init) = %v, %v; want ErrNotFound", got, err)
	}
	if _, err := agentOf(1, tb.look); !errors.Is(err, ErrNotFound) {
		t.Fatalf("AgentOf(1) err = %v; want ErrNotFound", err)
	}
	if _, err := agentOf(99, tb.look); !errors.Is(err, ErrNotFound) {
		t.Fatalf("AgentOf(missing) err = %v; want ErrNotFound", err)
	}
}

func TestAgentOfBoundsSkips(t *testing.T) {
	build := func(shells int) (table, int) {
		tb := table{1: {PID: 1, Comm: "init"}, 2: {PID: 2, Comm: "agent", PPID: 1}}
		parent := 2
		for i := 0; i < shells; i++ {
			pid := 10 + i
			tb[pid] = Proc{PID: pid, Comm: "sh", PPID: parent}
			parent = pid
		}
		tb[999] = Proc{PID: 999, Comm: "hook", PPID: parent}
		return tb, 999
	}
	tb, leaf := build(MaxWrapperSkips)
	if got, err := agentOf(leaf, tb.look); err != nil || got.PID != 2 {
		t.Fatalf("%d wrappers: AgentOf = %v, %v; want pid 2", MaxWrapperSkips, got, err)
	}
	tb, leaf = build(MaxWrapperSkips + 1)
	if got, err := agentOf(leaf, tb.look); !errors.Is(err, ErrNotFound) {
		t.Fatalf("%d wrappers: AgentOf = %v, %v; want ErrNotFound", MaxWrapperSkips+1, got, err)
	}
	// A cycle (impossible in a real table) still terminates.
	cyc := table{5: {PID: 5, Comm: "sh", PPID: 6}, 6: {PID: 6, Comm: "sh", PPID: 5}}
	if _, err := agentOf(5, cyc.look); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cycle: err = %v; want ErrNotFound", err)
	}
}

func TestAncestryBounds(t *testing.T) {
	tb := table{
		1: {PID: 1, Comm: "init"},
		2: {PID: 2, Comm: "a", PPID: 1},
		3: {PID: 3, Comm: "b", PPID: 2},
		4: {PID: 4, Comm: "c", PPID: 3},
	}
	for _, tc := range []struct{ max, want int }{{0, 0}, {-1, 0}, {1, 1}, {2, 2}, {4, 4}, {100, 4}} {
		got, err := ancestry(4, tc.max, tb.look)
		if err != nil || len(got) != tc.want {
			t.Fatalf("ancestry(4, %d) = %v, %v; want %d entries", tc.max, got, err, tc.want)
		}
		if tc.want > 0 && got[0].PID != 4 {
			t.Fatalf("ancestry starts at %d, want 4", got[0].PID)
		}
	}
	// The parent vanished mid-walk: the partial chain, no error.
	delete(tb, 2)
	if got, err := ancestry(4, 10, tb.look); err != nil || len(got) != 2 {
		t.Fatalf("partial ancestry = %v, %v; want 2 entries", got, err)
	}
	if _, err := ancestry(42, 10, tb.look); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ancestry of missing pid: err = %v; want ErrNotFound", err)
	}
}

func TestLookupRejectsNonPositivePID(t *testing.T) {
	for _, pid := range []int{0, -1} {
		if _, err := Lookup(pid); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Lookup(%d) err = %v; want ErrNotFound", pid, err)
		}
		if Alive(Proc{PID: pid}) {
			t.Fatalf("Alive(pid %d) = true", pid)
		}
	}
}

func TestIsTransient(t *testing.T) {
	for _, c := range []string{"sh", "bash", "zsh", "env", "timeout", "xargs", "harn", "busybox"} {
		if !IsTransient(c) {
			t.Errorf("IsTransient(%q) = false", c)
		}
	}
	for _, c := range []string{"claude", "node", "codex", "cursor", "", "shx"} {
		if IsTransient(c) {
			t.Errorf("IsTransient(%q) = true", c)
		}
	}
}
