//go:build !unix

package exec

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
)

type proc struct {
	cmd    *osexec.Cmd
	pid    int
	stdin  *os.File
	stdout *os.File
	stderr *os.File
}

func startProcess([]string, string, []string) (*proc, error) {
	return nil, fmt.Errorf("%w: process groups need a Unix system: %w", ErrStart, errors.ErrUnsupported)
}

func (p *proc) interrupt() error { return errors.ErrUnsupported }
func (p *proc) kill() error      { return errors.ErrUnsupported }

// GroupAlive reports whether any process of the process group pgid still
// exists; always false where process groups are not supported.
func GroupAlive(int) bool { return false }

func exitInfo(err error) (int, string) {
	if err != nil {
		return -1, ""
	}
	return 0, ""
}
