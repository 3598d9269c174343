//go:build unix

package cli

import (
	"os"
	"syscall"
)

// execInPlace replaces this process with path: the same pid, signals and
// terminal, so that `harn node` stops, and is stopped, as harnd.
func execInPlace(path string, argv []string) error {
	return syscall.Exec(path, argv, os.Environ())
}
