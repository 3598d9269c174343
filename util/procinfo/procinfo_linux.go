//go:build linux

package procinfo

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

func selfPID() int { return os.Getpid() }

// lookup reads /proc/<pid>/stat.
func lookup(pid int) (Proc, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	data, err := readStat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return Proc{}, fmt.Errorf("lookup pid %d: %w", pid, ErrNotFound)
		}
		return Proc{}, fmt.Errorf("lookup pid %d: %w", pid, err)
	}
	p, state, err := parseStat(path, pid, data)
	if err != nil {
		return Proc{}, err
	}
	if state == 'Z' || state == 'X' || state == 'x' {
		return Proc{}, fmt.Errorf("lookup pid %d: exited (state %c): %w", pid, state, ErrNotFound)
	}
	return p, nil
}

// readStat reads a /proc stat file in one read into a stack buffer (a
// stat line is a few hundred bytes), with three system calls and without
// the runtime's poller: the hook reads two or three of them on every tool
// call. A longer file is read whole.
func readStat(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var buf [2048]byte
	n, err := syscall.Read(fd, buf[:])
	syscall.Close(fd)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if n == len(buf) {
		return os.ReadFile(path)
	}
	return append([]byte(nil), buf[:n]...), nil
}

// statStartField is the index of starttime (field 22 of proc(5)) among the
// fields after the comm, which start with state (field 3).
const statStartField = 22 - 3

// parseStat parses the contents of /proc/<pid>/stat:
//
//	pid (comm) state ppid ... starttime ...
//
// The comm may contain spaces and parentheses, so it runs from the first
// '(' to the LAST ')'.
func parseStat(source string, pid int, data []byte) (Proc, byte, error) {
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return Proc{}, 0, &ParseError{Source: source, Detail: "no parenthesized comm"}
	}
	gotPID, err := strconv.Atoi(string(bytes.TrimSpace(data[:open])))
	if err != nil {
		return Proc{}, 0, &ParseError{Source: source, Detail: "bad pid field"}
	}
	if gotPID != pid {
		return Proc{}, 0, &ParseError{Source: source, Detail: fmt.Sprintf("pid field %d, want %d", gotPID, pid)}
	}
	rest := bytes.Fields(data[closing+1:])
	if len(rest) <= statStartField {
		return Proc{}, 0, &ParseError{Source: source, Detail: fmt.Sprintf("%d fields after comm, want more than %d", len(rest), statStartField)}
	}
	if len(rest[0]) != 1 {
		return Proc{}, 0, &ParseError{Source: source, Detail: "bad state field"}
	}
	ppid, err := strconv.Atoi(string(rest[1]))
	if err != nil || ppid < 0 {
		return Proc{}, 0, &ParseError{Source: source, Detail: "bad ppid field"}
	}
	start, err := strconv.ParseUint(string(rest[statStartField]), 10, 64)
	if err != nil {
		return Proc{}, 0, &ParseError{Source: source, Detail: "bad starttime field"}
	}
	return Proc{PID: pid, Start: start, Comm: string(data[open+1 : closing]), PPID: ppid}, rest[0][0], nil
}
