// Package procinfo identifies processes by pid and start time so that harn
// can tell whether the agent process behind a session is still running.
//
// Agents run their hooks through a transient shell (for example
// `sh -c "harn hook claude-code"`), so the hook's parent is rarely the agent
// itself. AgentOf walks up past such shells and wrappers to the process that
// owns the session. The node records that Proc and, once Alive reports it
// gone, ends the session with an explicit session.end. A Proc carries the
// process start time as well as the pid, so a recycled pid is never mistaken
// for the original process.
//
// Linux reads /proc directly. Other Unix systems fall back to ps(1); the rest
// report ErrUnsupported.
package procinfo

import (
	"errors"
	"fmt"
	"os"
)

// Proc identifies one process.
type Proc struct {
	// PID is the process id.
	PID int
	// Start is the process start time: on Linux, clock ticks since boot
	// (field 22 of /proc/<pid>/stat); on other Unix systems, Unix seconds
	// as reported by ps(1). Zero means unknown.
	Start uint64
	// Comm is the kernel's short command name (at most 15 bytes on Linux).
	Comm string
	// PPID is the parent's pid; 0 for pid 1 and kernel threads.
	PPID int
}

// String renders p for logs, e.g. `claude[4242@1234567]`.
func (p Proc) String() string {
	return fmt.Sprintf("%s[%d@%d]", p.Comm, p.PID, p.Start)
}

var (
	// ErrNotFound reports a process that does not exist or has exited
	// (a zombie counts as exited), or an ancestor walk that found no
	// suitable process.
	ErrNotFound = errors.New("procinfo: process not found")
	// ErrUnsupported reports a platform without a process table reader.
	// It is errors.ErrUnsupported, so either sentinel matches.
	ErrUnsupported = errors.ErrUnsupported
)

// ParseError reports process information that could not be understood.
type ParseError struct {
	// Source names what was parsed, e.g. "/proc/42/stat" or "ps -p 42".
	Source string
	// Detail says what was wrong.
	Detail string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("procinfo: cannot parse %s: %s", e.Source, e.Detail)
}

// MaxWrapperSkips bounds how many shells and wrappers AgentOf walks past.
const MaxWrapperSkips = 8

// transient lists the command names AgentOf skips: shells and wrappers that
// run a hook on the agent's behalf and exit with it.
var transient = map[string]bool{
	"sh": true, "dash": true, "bash": true, "zsh": true, "fish": true,
	"ksh": true, "mksh": true, "busybox": true, "env": true,
	"timeout": true, "nohup": true, "setsid": true, "stdbuf": true,
	"nice": true, "xargs": true, "harn": true,
}

// IsTransient reports whether comm names a shell or wrapper that AgentOf
// skips.
func IsTransient(comm string) bool { return transient[comm] }

// Self describes the calling process.
func Self() (Proc, error) { return Lookup(selfPID()) }

// Lookup describes process pid. It returns an error wrapping ErrNotFound
// when the process does not exist or has exited (including zombies).
func Lookup(pid int) (Proc, error) {
	if pid <= 0 {
		return Proc{}, fmt.Errorf("lookup pid %d: %w", pid, ErrNotFound)
	}
	return lookup(pid)
}

// Ancestry returns pid, its parent, its grandparent and so on, stopping
// after max entries or at pid 1 (which is included). max <= 0 yields no
// entries. The first lookup's error is returned as is (ErrNotFound when pid
// is gone); if an ancestor exits during the walk, the chain found so far is
// returned without error.
func Ancestry(pid int, max int) ([]Proc, error) {
	return ancestry(pid, max, Lookup)
}

func ancestry(pid, max int, look func(int) (Proc, error)) ([]Proc, error) {
	if max <= 0 {
		return nil, nil
	}
	p, err := look(pid)
	if err != nil {
		return nil, err
	}
	chain := []Proc{p}
	for len(chain) < max && p.PID != 1 && p.PPID > 0 {
		q, err := look(p.PPID)
		if err != nil {
			break // the parent exited meanwhile; report what we have
		}
		chain = append(chain, q)
		p = q
	}
	return chain, nil
}

// AgentOf returns the nearest ancestor of pid (pid itself excluded) whose
// command is not a transient shell or wrapper (see IsTransient). It walks
// past at most MaxWrapperSkips such processes and never returns pid 1; in
// either case, or if pid or an ancestor is gone, the error wraps
// ErrNotFound.
func AgentOf(pid int) (Proc, error) {
	return agentOf(pid, Lookup)
}

// AgentOfSelf is AgentOf(os.Getpid()), which knows its own parent without
// reading its own stat file.
func AgentOfSelf() (Proc, error) {
	return agentFrom(Proc{PID: os.Getpid(), PPID: os.Getppid()}, Lookup)
}

func agentOf(pid int, look func(int) (Proc, error)) (Proc, error) {
	p, err := look(pid)
	if err != nil {
		return Proc{}, fmt.Errorf("agent of pid %d: %w", pid, err)
	}
	return agentFrom(p, look)
}

// agentFrom walks up from p (whose PPID is known).
func agentFrom(p Proc, look func(int) (Proc, error)) (Proc, error) {
	pid := p.PID
	for skips := 0; ; skips++ {
		if p.PPID <= 1 {
			return Proc{}, fmt.Errorf("agent of pid %d: reached pid %d without a non-wrapper ancestor: %w", pid, p.PPID, ErrNotFound)
		}
		parent, err := look(p.PPID)
		if err != nil {
			return Proc{}, fmt.Errorf("agent of pid %d: parent %d: %w", pid, p.PPID, err)
		}
		if !IsTransient(parent.Comm) {
			return parent, nil
		}
		if skips >= MaxWrapperSkips {
			return Proc{}, fmt.Errorf("agent of pid %d: more than %d wrapper processes: %w", pid, MaxWrapperSkips, ErrNotFound)
		}
		p = parent
	}
}

// Alive reports whether p still runs: its pid exists, is not a zombie and,
// when p.Start is known, started at p.Start. A recycled pid is not alive.
func Alive(p Proc) bool {
	q, err := Lookup(p.PID)
	if err != nil {
		return false
	}
	return p.Start == 0 || q.Start == p.Start
}
