// Package heartbeat writes the heartbeat projection of each live session
// to active/<id>.json, the file that hooks and other local readers read
// without asking the node. It owns the projector (coalesced writes by temp
// file and rename, removal when a session ends) and the reset of the
// directory at start.
package heartbeat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// Projector writes the heartbeat projection of each live session to
// active/<id>.json (temp file and rename, so a reader never sees half a
// file) and removes the file when the session ends. Writes are coalesced:
// a session marked many times before the writer runs is written once.
type Projector struct {
	dir   string
	log   *slog.Logger
	clock clock.Clock

	mu    sync.Mutex
	dirty map[string]presence.State
	// failed are the writes that failed, kept for Redo.
	failed map[string]presence.State
	kick   chan struct{}
	// delay coalesces: after a mark the writer waits this long, so that a
	// burst of events becomes one write per session.
	delay time.Duration
	// onWrite is told after each flush that wrote or removed a file.
	onWrite func()
}

// OnWrite sets f to be called after every flush that wrote or removed at
// least one heartbeat (the node's change broadcaster). Set it before Run.
func (p *Projector) OnWrite(f func()) { p.onWrite = f }

// New returns a projector writing into dir (which must exist).
func New(dir string, log *slog.Logger, delay time.Duration, clk clock.Clock) *Projector {
	return &Projector{dir: dir, log: log, delay: delay, clock: clk, dirty: map[string]presence.State{},
		failed: map[string]presence.State{}, kick: make(chan struct{}, 1)}
}

// FileName is the name of a session's heartbeat file in the directory.
func FileName(session string) string {
	return url.PathEscape(session) + ".json"
}

// Mark queues s for writing. It never blocks.
func (p *Projector) Mark(s presence.State) {
	p.mu.Lock()
	p.dirty[s.SessionID] = s
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run writes marked sessions, ProjectDelay after the first mark of a
// burst, until stop closes. The caller owns the goroutine.
func (p *Projector) Run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-p.kick:
		}
		if p.delay > 0 && !clock.Sleep(p.clock, p.delay, stop) {
			return
		}
		p.Flush()
	}
}

// Flush writes every marked session now.
func (p *Projector) Flush() {
	p.mu.Lock()
	batch := p.dirty
	p.dirty = make(map[string]presence.State, len(batch))
	p.mu.Unlock()
	for _, s := range batch {
		err := p.write(s)
		p.mu.Lock()
		if err != nil {
			p.failed[s.SessionID] = s
		} else {
			delete(p.failed, s.SessionID)
		}
		p.mu.Unlock()
		if err != nil {
			p.log.Error("heartbeat", "session", s.SessionID, "err", err)
		}
	}
	if len(batch) > 0 && p.onWrite != nil {
		p.onWrite()
	}
}

// Redo queues again the writes that failed (a full disk that has room
// again), unless a newer state of the session is already queued. It never
// blocks.
func (p *Projector) Redo() {
	p.mu.Lock()
	n := len(p.failed)
	for id, s := range p.failed {
		if _, queued := p.dirty[id]; !queued {
			p.dirty[id] = s
		}
	}
	clear(p.failed)
	p.mu.Unlock()
	if n == 0 {
		return
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *Projector) write(s presence.State) error {
	path := filepath.Join(p.dir, FileName(s.SessionID))
	if s.Ended {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := heartbeatBytes(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(p.dir, ".hb-*")
	if err != nil {
		return fmt.Errorf("heartbeat temp: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// heartbeatBytes is the content of a session's heartbeat file.
func heartbeatBytes(s presence.State) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Reset makes active/ match the live set at start: heartbeats of
// sessions that are not live (or unknown) are removed, and every live
// session is written, unless its file already holds exactly what would be
// written (a restart folds the same state again; rewriting thousands of
// identical files dominated the start).
func (p *Projector) Reset(live []presence.State) {
	want := map[string]bool{}
	for _, s := range live {
		want[FileName(s.SessionID)] = true
	}
	if ents, err := os.ReadDir(p.dir); err == nil {
		for _, e := range ents {
			if !want[e.Name()] || strings.HasPrefix(e.Name(), ".hb-") {
				os.Remove(filepath.Join(p.dir, e.Name()))
			}
		}
	}
	for _, s := range live {
		if !p.current(s) {
			p.Mark(s)
		}
	}
	p.Flush()
}

// current reports whether s's heartbeat file is a regular file (not a
// symlink) with mode 0600 holding exactly what write would put there.
func (p *Projector) current(s presence.State) bool {
	want, err := heartbeatBytes(s)
	if err != nil {
		return false
	}
	f, err := os.OpenFile(filepath.Join(p.dir, FileName(s.SessionID)), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || fi.Size() != int64(len(want)) {
		return false
	}
	got := make([]byte, len(want)+1)
	n, err := io.ReadFull(f, got)
	return err == io.ErrUnexpectedEOF && n == len(want) && bytes.Equal(got[:n], want)
}
