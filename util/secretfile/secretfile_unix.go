//go:build unix

package secretfile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// foreignOwner says why a file's owner is wrong, or "" when it is this
// process's user (or root).
func foreignOwner(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if uid := os.Getuid(); int(st.Uid) != uid && st.Uid != 0 {
		return fmt.Sprintf("owned by uid %d, not by you (uid %d)", st.Uid, uid)
	}
	return ""
}
