//go:build !linux

package procguard

import "syscall"

// groupAttr: a group of its own (no parent death signal here: the guard
// polls its parent, and the node reaps at start).
func groupAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func childAttr() *syscall.SysProcAttr { return nil }
