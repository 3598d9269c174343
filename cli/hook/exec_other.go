//go:build !unix

package hook

import (
	"errors"
	"os"
	"os/exec"
)

// ExecInPlace runs path as a child with this process's streams and
// returns its exit code (this system has no exec in place).
func ExecInPlace(path string, argv []string) error {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &silentError{code: ee.ExitCode()}
	}
	return err
}
