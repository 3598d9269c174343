//go:build unix

package hook

import (
	"os"
	"syscall"
)

// execInPlace replaces this process with path: the same pid, signals and
// terminal, so that `harn node` stops, and is stopped, as harnd.
func ExecInPlace(path string, argv []string) error {
	return syscall.Exec(path, argv, os.Environ())
}
