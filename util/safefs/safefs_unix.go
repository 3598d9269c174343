//go:build unix

package safefs

import (
	"io/fs"
	"syscall"
)

// oNonblock keeps the open of a FIFO from waiting for a writer (it is
// then refused as not regular).
const oNonblock = syscall.O_NONBLOCK

func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
