//go:build !unix

package cli

import (
	"errors"
	"os"
	"os/exec"
)

// execInPlace runs path as a child with this process's streams and
// returns its exit code (this system has no exec in place).
func execInPlace(path string, argv []string) error {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &silentError{code: ee.ExitCode()}
	}
	return err
}
