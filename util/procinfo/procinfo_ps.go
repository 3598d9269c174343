//go:build unix && !linux

package procinfo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func selfPID() int { return os.Getpid() }

// psTimeout bounds one ps(1) call.
const psTimeout = 5 * time.Second

// lookup runs `ps -o stat=,ppid=,lstart=,comm= -p PID`. The start time is
// lstart as Unix seconds.
func lookup(pid int) (Proc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), psTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ps", "-o", "stat=,ppid=,lstart=,comm=", "-p", strconv.Itoa(pid))
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && len(bytes.TrimSpace(out)) == 0 {
			return Proc{}, fmt.Errorf("lookup pid %d: %w", pid, ErrNotFound)
		}
		return Proc{}, fmt.Errorf("lookup pid %d: ps: %w", pid, err)
	}
	p, zombie, err := parsePS("ps -p "+strconv.Itoa(pid), pid, string(out))
	if err != nil {
		return Proc{}, err
	}
	if zombie {
		return Proc{}, fmt.Errorf("lookup pid %d: exited (zombie): %w", pid, ErrNotFound)
	}
	return p, nil
}

// parsePS parses one line `STAT PPID Www Mmm dd hh:mm:ss yyyy COMM`.
func parsePS(source string, pid int, out string) (Proc, bool, error) {
	line := strings.TrimSpace(out)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(line)
	if len(fields) < 8 {
		return Proc{}, false, &ParseError{Source: source, Detail: fmt.Sprintf("%d fields, want at least 8", len(fields))}
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil || ppid < 0 {
		return Proc{}, false, &ParseError{Source: source, Detail: "bad ppid"}
	}
	started, err := time.ParseInLocation("Mon Jan 2 15:04:05 2006", strings.Join(fields[2:7], " "), time.Local)
	if err != nil {
		return Proc{}, false, &ParseError{Source: source, Detail: "bad lstart"}
	}
	// comm is the remainder of the line after the seventh field, spaces kept.
	rest := line
	for i := 0; i < 7; i++ {
		rest = strings.TrimLeft(rest, " \t")
		if j := strings.IndexAny(rest, " \t"); j >= 0 {
			rest = rest[j:]
		}
	}
	comm := filepath.Base(strings.TrimSpace(rest))
	var start uint64
	if s := started.Unix(); s > 0 {
		start = uint64(s)
	}
	zombie := strings.HasPrefix(fields[0], "Z")
	return Proc{PID: pid, Start: start, Comm: comm, PPID: ppid}, zombie, nil
}
