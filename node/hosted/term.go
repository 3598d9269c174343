package hosted

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/procinfo"
	"github.com/harn-dev/harn/util/text"
)

// Bounds of one terminal.
const (
	// subBuffer bounds the output chunks waiting for one attach; an attach
	// that falls that far behind is dropped (its client reattaches and
	// gets the screen), never the agent slowed.
	subBuffer = 512
	// readChunk is one read of the terminal's output.
	readChunk = 32 << 10
	// writeWait bounds one write into the terminal: an agent that reads
	// no input does not stall its operator.
	writeWait = 2 * time.Second
	// PeekLines and PeekChars bound a peek.
	PeekLines = 6
	PeekChars = 160
	// peekEvery bounds how often a changed peek republishes the row.
	peekEvery = 250 * time.Millisecond
	// maxRows and maxCols bound a terminal's size.
	maxRows, maxCols = 500, 1000
)

// session is one hosted process and its terminal.
type session struct {
	r        *Room
	id       string
	spec     Spec
	dir      string
	worktree string
	branch   string
	started  time.Time

	cmd  *exec.Cmd
	pty  *os.File
	proc procinfo.Proc

	// wmu orders writes into the terminal (a steer's text and its Enter
	// stay together).
	wmu sync.Mutex
	// writers counts read-write attaches: while one is attached, its own
	// terminal answers the agent's queries, not the screen model.
	writers atomic.Int32

	mu         sync.Mutex
	emu        *vt.Emulator
	subs       map[*Sub]struct{}
	busy       bool // a turn is open
	needsInput bool
	queue      []string
	lastPeek   string
	peekAt     time.Time
	peekTimer  clock.Timer
	drawn      bool
	stopWhy    string
	natives    map[string]bool // the agent's own session ids tied to this one
	verified   map[procinfo.Proc]bool
	done       chan struct{}
	endReason  string
}

func newSession(r *Room, id string, spec Spec, dir string, wt *Worktree, rows, cols uint16, now time.Time) *session {
	s := &session{r: r, id: id, spec: spec, dir: dir, started: now, subs: map[*Sub]struct{}{},
		busy: spec.Busy, natives: map[string]bool{}, verified: map[procinfo.Proc]bool{}, done: make(chan struct{})}
	if wt != nil {
		s.worktree, s.branch = wt.Path, wt.Branch
	}
	s.emu = vt.NewEmulator(int(cols), int(rows))
	if sb := s.emu.Scrollback(); sb != nil {
		sb.SetMaxLines(r.cfg.Scrollback)
	}
	return s
}

func (s *session) info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Info{ID: s.id, Agent: s.spec.Agent, Name: s.spec.Name, Dir: s.dir, Worktree: s.worktree, Branch: s.branch,
		PID: s.proc.PID, Started: s.started, Attached: len(s.subs), Queued: len(s.queue), By: s.spec.By}
}

// readLoop copies the terminal's output into the screen model and to
// every attach, until the process closes its terminal; then it waits for
// the process and records its end.
func (s *session) readLoop() {
	defer s.r.wg.Done()
	buf := make([]byte, readChunk)
	for {
		n, err := s.pty.Read(buf)
		if n > 0 {
			s.output(append([]byte(nil), buf[:n]...))
		}
		if err != nil {
			break
		}
	}
	werr := s.cmd.Wait()
	s.pty.Close()
	s.mu.Lock()
	why := s.stopWhy
	if why == "" {
		why = "the agent exited"
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			why = "the agent exited: " + ee.ProcessState.String()
		}
	}
	s.endReason = why
	if s.peekTimer != nil {
		s.peekTimer.Stop()
	}
	subs := s.subs
	s.subs = map[*Sub]struct{}{}
	// Ends replyLoop: its read of the answers' pipe sees EOF. (The
	// emulator's Close would race with that read.)
	if pw, ok := s.emu.InputPipe().(*io.PipeWriter); ok {
		pw.Close()
	}
	s.mu.Unlock()
	for sub := range subs {
		sub.end(why)
	}
	close(s.done)
	s.r.record(s, presence.TypeSessionEnd, map[string]any{presence.AttrReason: text.Clip(why, 120)})
	s.r.endedSession(s)
	s.r.log.Info("hosted session ended", "session", s.id, "reason", why)
}

// output is one chunk the agent drew.
func (s *session) output(b []byte) {
	s.mu.Lock()
	s.emu.Write(b)
	for sub := range s.subs {
		select {
		case sub.out <- b:
		default:
			delete(s.subs, sub)
			if !sub.readOnly {
				s.writers.Add(-1)
			}
			go sub.end("the attach fell behind the agent's output; attach again")
		}
	}
	first := !s.drawn
	s.drawn = true
	notify := s.peekChangedLocked()
	s.mu.Unlock()
	if notify && s.r.cfg.OnChange != nil {
		s.r.cfg.OnChange(s.id)
	}
	if first && s.spec.TypePrompt != "" {
		p := s.spec.TypePrompt
		s.r.cfg.Clock.AfterFunc(500*time.Millisecond, func() {
			if err := s.typeText(p); err != nil {
				s.r.log.Warn("hosted: the first prompt was not typed", "session", s.id, "err", err)
			}
		})
	}
}

// peekChangedLocked reports whether the peek of a session that waits for
// input changed and may be told now; a change within peekEvery of the
// last is told by a timer at the end of that window.
func (s *session) peekChangedLocked() bool {
	if !s.needsInput {
		return false
	}
	p := strings.Join(s.peekLocked(), "\n")
	if p == s.lastPeek {
		return false
	}
	now := s.r.cfg.Clock.Now()
	if wait := peekEvery - now.Sub(s.peekAt); wait > 0 {
		if s.peekTimer == nil {
			s.peekTimer = s.r.cfg.Clock.AfterFunc(wait, func() {
				s.mu.Lock()
				s.peekTimer = nil
				notify := s.peekChangedLocked()
				s.mu.Unlock()
				if notify && s.r.cfg.OnChange != nil {
					s.r.cfg.OnChange(s.id)
				}
			})
		}
		return false
	}
	s.lastPeek, s.peekAt = p, now
	return true
}

// replyLoop answers the agent's terminal queries (device attributes,
// cursor position) from the screen model while no read-write attach's own
// terminal answers them, so that an agent never waits on an answer
// nobody gives.
func (s *session) replyLoop() {
	defer s.r.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, err := s.emu.Read(buf)
		if n > 0 && s.writers.Load() == 0 {
			_ = s.write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// write types b into the terminal, bounded by writeWait.
func (s *session) write(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeLocked(b)
}

func (s *session) writeLocked(b []byte) error {
	select {
	case <-s.done:
		return fmt.Errorf("%w: %s has ended", ErrNoSession, s.id)
	default:
	}
	s.pty.SetWriteDeadline(time.Now().Add(writeWait)) //clock:real a terminal's write deadline is wall time
	_, err := s.pty.Write(b)
	s.pty.SetWriteDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("hosted: type into %s: %w", s.id, err)
	}
	return nil
}

// typeText types t and the agent's Enter, as one write each, together.
func (s *session) typeText(t string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writeLocked([]byte(t)); err != nil {
		return err
	}
	return s.writeLocked(s.submit())
}

func (s *session) submit() []byte {
	if len(s.spec.Submit) > 0 {
		return s.spec.Submit
	}
	return []byte{'\r'}
}

// resize sets the terminal's size (the agent gets SIGWINCH) and the
// screen model's.
func (s *session) resize(rows, cols uint16) {
	if rows == 0 || cols == 0 {
		return
	}
	rows, cols = min(rows, maxRows), min(cols, maxCols)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emu.Height() == int(rows) && s.emu.Width() == int(cols) {
		return
	}
	_ = pty.Setsize(s.pty, &pty.Winsize{Rows: rows, Cols: cols})
	s.emu.Resize(int(cols), int(rows))
}

// stop ends the process: SIGTERM to its process group, SIGKILL after
// grace. It returns at once; the session's end is recorded by readLoop.
func (s *session) stop(why string, grace time.Duration) {
	s.mu.Lock()
	if s.stopWhy == "" {
		s.stopWhy = why
	}
	s.mu.Unlock()
	pid := s.proc.PID
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	_ = syscall.Kill(pid, syscall.SIGHUP) // a shell that ignores TERM in its own group still hangs up
	t := s.r.cfg.Clock.AfterFunc(grace, func() {
		select {
		case <-s.done:
		default:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	go func() {
		<-s.done
		t.Stop()
	}()
}

// kill ends the process at once.
func (s *session) kill(why string) {
	s.mu.Lock()
	if s.stopWhy == "" {
		s.stopWhy = why
	}
	s.mu.Unlock()
	_ = syscall.Kill(-s.proc.PID, syscall.SIGKILL)
	_ = syscall.Kill(s.proc.PID, syscall.SIGKILL)
}

// peekLocked is the last non-blank lines of the screen, control
// characters stripped, each clipped.
func (s *session) peekLocked() []string {
	lines := strings.Split(s.emu.String(), "\n")
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < PeekLines; i-- {
		l := strings.TrimSpace(text.OneLine(lines[i]))
		if l == "" {
			continue
		}
		out = append(out, text.Clip(l, PeekChars))
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
