package hook

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DaemonName is the daemon's executable name.
const DaemonName = "harnd"

// ErrNoDaemon: harnd is neither beside harn nor on PATH.
var ErrNoDaemon = errors.New("harnd not found")

// findDaemon is harnd beside this executable (its symlink, then its real
// path), else on PATH.
func FindDaemon() (string, error) {
	var tried []string
	if exe, err := os.Executable(); err == nil {
		dirs := []string{filepath.Dir(exe)}
		if real, err := filepath.EvalSymlinks(exe); err == nil && filepath.Dir(real) != dirs[0] {
			dirs = append(dirs, filepath.Dir(real))
		}
		for _, dir := range dirs {
			p := filepath.Join(dir, DaemonName)
			tried = append(tried, dir)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath(DaemonName); err == nil {
		return p, nil
	}
	return "", WithCode(ExitNoDaemon, fmt.Errorf("%w beside harn (in %s) or on PATH; install both with `make install`, or put harnd on PATH",
		ErrNoDaemon, strings.Join(tried, ", ")))
}
