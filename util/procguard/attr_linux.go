package procguard

import "syscall"

// groupAttr: a group of its own; the guard's parent death signal is
// SIGTERM (it acts on it), a bare command's SIGKILL.
func groupAttr(guarded bool) *syscall.SysProcAttr {
	sig := syscall.SIGKILL
	if guarded {
		sig = syscall.SIGTERM
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}

// childAttr: the guard's command, in the guard's group, dies with it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
