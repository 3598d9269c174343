//go:build !unix

package procinfo

import (
	"fmt"
	"os"
)

func selfPID() int { return os.Getpid() }

func lookup(pid int) (Proc, error) {
	return Proc{}, fmt.Errorf("lookup pid %d: %w", pid, ErrUnsupported)
}
