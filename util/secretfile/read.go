package secretfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Read reads a secret from a file that passes Check and is not a symlink:
// the path itself must be the file (a link could point at another
// user's key, or be swapped for one between a check and the read). The
// file is opened without following a link and checked on the open
// descriptor, so what is read is what was checked. At most max bytes;
// the content is trimmed of surrounding white space. A refusal is an
// *InsecureFileError (one line, naming the fix).
func Read(path string, max int64) (string, error) {
	li, err := os.Lstat(path)
	if err != nil {
		return "", fmt.Errorf("trust: secret file: %w", err)
	}
	if li.Mode()&fs.ModeSymlink != 0 {
		return "", &InsecureFileError{Path: path, Mode: li.Mode(), Why: "a symlink; name the file itself"}
	}
	f, err := openNoFollow(path)
	if err != nil {
		return "", fmt.Errorf("trust: secret file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("trust: secret file: %w", err)
	}
	if err := checkInfo(path, fi); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", fmt.Errorf("trust: secret file: %w", err)
	}
	if int64(len(b)) > max {
		return "", fmt.Errorf("trust: secret file %s is over %d bytes", ShellQuote(path), max)
	}
	return strings.TrimSpace(string(b)), nil
}
