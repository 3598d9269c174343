//go:build unix

package secretfile

import (
	"os"
	"syscall"
)

// openNoFollow opens path for reading; a symlink (swapped in after the
// Lstat) fails with ELOOP. O_NONBLOCK: a fifo does not hang the open.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
