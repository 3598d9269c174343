//go:build unix

package exec

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"syscall"
)

// proc is one agent process, the leader of its own process group, with the
// parent's ends of its three pipes.
type proc struct {
	cmd    *osexec.Cmd
	pid    int
	stdin  *os.File // write end
	stdout *os.File // read end
	stderr *os.File // read end
}

// startProcess starts argv in dir with env, in a new process group whose id
// is the child's pid. The child's stdio are plain pipes (no copying
// goroutines), so waiting for the process never waits for a grandchild
// that still holds one of them.
func startProcess(argv []string, dir string, env []string) (*proc, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("%w: %s: %w", ErrStart, argv[0], err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	return &proc{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stdout: outR, stderr: errR}, nil
}

// interrupt sends SIGINT to the whole process group.
func (p *proc) interrupt() error { return signalGroup(p.pid, syscall.SIGINT) }

// kill sends SIGKILL to the whole process group. A group already gone is
// not an error.
func (p *proc) kill() error { return signalGroup(p.pid, syscall.SIGKILL) }

func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("exec: refusing to signal process group %d", pgid)
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// GroupAlive reports whether any process of the process group pgid still
// exists (a zombie not yet reaped counts).
func GroupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// exitInfo reads how a process ended from Wait's error.
func exitInfo(err error) (code int, signal string) {
	var ee *osexec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return -1, ""
		}
		return 0, ""
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return ee.ExitCode(), ""
}
