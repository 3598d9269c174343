package hosted

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/procinfo"
)

// stateFile is what the room keeps on disk: the processes it runs (so
// that a node killed with -9 reaps them at its next start) and the
// worktrees it made.
type stateFile struct {
	Sessions  []procState `json:"sessions"`
	Worktrees []Worktree  `json:"worktrees"`
}

type procState struct {
	ID    string `json:"id"`
	Agent string `json:"agent"`
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// maxStateBytes bounds state.json as read.
const maxStateBytes = 4 << 20

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

func readState(dir string) (stateFile, error) {
	var st stateFile
	f, err := os.Open(statePath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("hosted: read state: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return st, fmt.Errorf("hosted: read state: %w", err)
	}
	if fi.Size() > maxStateBytes {
		return st, fmt.Errorf("hosted: %s is %d bytes, over %d; move it away and start again", statePath(dir), fi.Size(), maxStateBytes)
	}
	if err := json.NewDecoder(f).Decode(&st); err != nil {
		return st, fmt.Errorf("hosted: %s: %w; move it away and start again", statePath(dir), err)
	}
	return st, nil
}

// save writes the state: a temp file, synced, renamed over the old one.
func (r *Room) save() error {
	r.mu.Lock()
	st := stateFile{Worktrees: append([]Worktree(nil), r.wts...)}
	for _, s := range r.sessions {
		st.Sessions = append(st.Sessions, procState{ID: s.id, Agent: s.spec.Agent, PID: s.proc.PID, Start: s.proc.Start})
	}
	r.mu.Unlock()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(r.cfg.StateDir, ".state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), statePath(r.cfg.StateDir))
}

// reapProc ends p (its process group first) when it still runs: SIGTERM,
// then SIGKILL after a second. It reports whether p was running.
func reapProc(p procinfo.Proc, c clock.Clock) bool {
	if p.PID <= 1 || !procinfo.Alive(p) {
		return false
	}
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	for i := 0; i < 20 && procinfo.Alive(p); i++ {
		clock.Sleep(c, 50*time.Millisecond, nil)
	}
	if procinfo.Alive(p) {
		_ = syscall.Kill(-p.PID, syscall.SIGKILL)
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	return true
}
