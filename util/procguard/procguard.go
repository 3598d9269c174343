// Package procguard is the room of a tool's process group that dies with
// its node: the shell tool's commands and the MCP servers harn's own
// agent starts.
//
// A tool runs in a process group of its own, led by a guard: the node's
// own binary run again with Arg, which runs the tool's command as its
// child in the same group. The guard learns that the node died from its
// parent death signal (Linux: SIGTERM, set when the node forks it), or,
// on any system and as a fallback, from its parent pid changing (polled
// every 250 ms). It then kills the whole group with SIGKILL, itself
// included, so nothing the tool started outlives a kill -9 of the node.
// The command itself gets SIGKILL when the guard dies (Linux).
//
// A parent death signal is sent when the thread that forked the child
// exits, not the process (the Go issue on Pdeathsig and threads): Start
// forks from a goroutine locked to its thread until the child is waited
// for, so that thread cannot exit meanwhile; and the guard acts on a
// SIGTERM only when its parent is gone, so a stray signal (the node's
// own SIGTERM to the group, which the command gets too) kills nothing
// early.
//
// The guard waits for one byte on fd 3 before it starts the command (and
// runs nothing without it): the node records the group (its pgid and
// start time) first, so that a node on a system without a parent death
// signal reaps what a dead run left (Reap), and nothing runs unrecorded.
package procguard

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/harn-dev/harn/util/procinfo"
)

// Arg is the first argument that makes the node's binary a guard: argv
// is [binary, Arg, "--", command...].
const Arg = "__harn-tool-guard"

// pollEvery is how often a guard checks that its parent lives.
const pollEvery = 250 * time.Millisecond

// goFD is the guard's go-ahead pipe (the first of ExtraFiles).
const goFD = 3

// Wrap is argv run under the guard binary (guard empty: argv alone).
func Wrap(guard string, argv []string) []string {
	if guard == "" {
		return argv
	}
	return append([]string{guard, Arg, "--"}, argv...)
}

// Main runs the guard with the arguments after Arg; it returns the exit
// code (the command's, or 128 plus the signal that ended it).
func Main(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "harn tool guard: no command")
		return 2
	}
	ppid := os.Getppid()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// the go-ahead: one byte once the node recorded the group; without it
	// (the record failed, or the node died) nothing runs
	f := os.NewFile(goFD, "go")
	if f == nil {
		return 125
	}
	n, _ := f.Read(make([]byte, 1))
	_ = f.Close()
	if n != 1 {
		return 125
	}
	if os.Getppid() != ppid {
		killGroup()
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = childAttr()
	done, err := Start(cmd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harn tool guard:", err)
		return 127
	}
	tick := time.NewTicker(pollEvery) //clock:real a process's parent dies in real time
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return exitCode(err)
		case <-sigs:
			// SIGINT and SIGTERM reach the whole group: the command
			// answers them; the guard acts only for a dead parent.
		case <-tick.C:
		}
		if os.Getppid() != ppid {
			killGroup()
		}
	}
}

// killGroup kills the guard's process group, itself included.
func killGroup() {
	_ = syscall.Kill(0, syscall.SIGKILL)
	os.Exit(137) // not reached
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return 1
		}
		return 0
	}
	if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		return 128 + int(st.Signal())
	}
	return ee.ExitCode()
}

// Start starts cmd from a goroutine locked to its OS thread, which stays
// locked until cmd is waited for: a parent death signal set on cmd is
// then sent when this process dies, never because the forking thread
// ended. It returns the channel of cmd.Wait's result.
func Start(cmd *exec.Cmd) (<-chan error, error) {
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}

// Command builds the command of a tool: argv under guard (when not empty)
// in a process group of its own, with the parent death signal where the
// system has one; ready is the go-ahead's write end (nil without a
// guard): write a byte or close it once the group is recorded.
func Command(guard string, argv []string) (cmd *exec.Cmd, ready *os.File, err error) {
	full := Wrap(guard, argv)
	cmd = exec.Command(full[0], full[1:]...)
	cmd.SysProcAttr = groupAttr(guard != "")
	if guard == "" {
		return cmd, nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.ExtraFiles = []*os.File{r}
	return cmd, w, nil
}

// Started closes the child's end of the go-ahead pipe once cmd started
// (call it after Start, whatever its result).
func Started(cmd *exec.Cmd) {
	for _, f := range cmd.ExtraFiles {
		_ = f.Close()
	}
}

// Group is a tool's process group as the node records it before it runs:
// its pgid (the guard's pid) and the guard's start time (procinfo's), so
// that a pid used again is never taken for it.
type Group struct {
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"`
}

// GroupOf is the group that pid leads.
func GroupOf(pid int) (Group, error) {
	p, err := procinfo.Lookup(pid)
	if err != nil {
		return Group{}, err
	}
	return Group{PGID: pid, Start: p.Start}, nil
}

// Reap kills what is left of a group a dead node recorded, and reports
// whether it sent the signal. Its leader alive with another start time is
// another process: left alone. Its leader gone, a process still in the
// group is the group's (a pid is not given again while it names a live
// group).
func Reap(g Group) bool {
	if g.PGID <= 1 {
		return false
	}
	if p, err := procinfo.Lookup(g.PGID); err == nil && p.Start != g.Start {
		return false
	}
	return syscall.Kill(-g.PGID, syscall.SIGKILL) == nil
}
