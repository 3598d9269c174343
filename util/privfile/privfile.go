// Package privfile writes a private (0600) file whole: a temp file beside
// it, then a rename, so a reader sees the old content or the new one.
// A small named util package (util/ room): no I/O beyond the one file.
package privfile

import (
	"fmt"
	"os"
)

// Write writes content to path with mode 0600 (whatever the umask) by a
// temp file and a rename.
func Write(path, content string) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
