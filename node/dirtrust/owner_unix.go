//go:build unix

package dirtrust

import (
	"io/fs"
	"syscall"
)

// fileUID is a file's owner, when the system tells.
func fileUID(fi fs.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}
