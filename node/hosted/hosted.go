package hosted

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/ids"
	"github.com/harn-dev/harn/util/procinfo"
	"github.com/harn-dev/harn/util/text"
)

// Errors of the room. The node maps each to its status and exit code.
var (
	// ErrTooMany refuses a start over Config.Max live sessions.
	ErrTooMany = errors.New("too many hosted sessions")
	// ErrNoSession: no live hosted session has that id here.
	ErrNoSession = errors.New("no such hosted session")
	// ErrBadStart is a start the room cannot make: a missing directory or
	// binary, a branch that exists, a worktree another session uses.
	ErrBadStart = errors.New("cannot start")
	// ErrReadOnly refuses input from an attach that may only watch.
	ErrReadOnly = errors.New("this attach may watch but not type")
	// ErrQueueFull refuses a follow-up over MaxQueued held ones.
	ErrQueueFull = errors.New("too many held follow-ups")
	// ErrClosed: the room is closing.
	ErrClosed = errors.New("the node is stopping")
	// ErrForged refuses hook events that claim a hosted session from a
	// process outside its process tree.
	ErrForged = errors.New("hosted: events from outside the hosted process claim its session")
)

// Bounds of the room.
const (
	// MaxQueued bounds the follow-ups one session holds.
	MaxQueued = 16
	// MaxText bounds one steer or follow-up.
	MaxText = 16 << 10
	// MaxInput bounds one write of an attach.
	MaxInput = 64 << 10
	// maxEnded bounds the ended sessions whose processes the room still
	// knows (for a hook's events that were spooled and arrive late).
	maxEnded = 64
	// closeGrace bounds the SIGTERM-to-SIGKILL wait at the node's stop,
	// which is itself bounded (a few seconds).
	closeGrace = 1500 * time.Millisecond
)

// Sink records the room's events (the node's ingest).
type Sink interface {
	Ingest(evs []presence.Event) error
}

// Config configures the room. Build it with DefaultConfig.
type Config struct {
	// Node is this node's name.
	Node string
	// StateDir holds state.json (what runs, the worktrees made); private.
	StateDir string
	// Max caps the live hosted sessions (--max-hosted).
	Max int
	// Grace is the wait from SIGTERM to SIGKILL of `agents stop`.
	Grace time.Duration
	// Rows and Cols are a terminal's size until an attach sets it.
	Rows, Cols uint16
	// Scrollback bounds the lines a screen keeps above its top.
	Scrollback int
	// Environ is the node's environment; a hosted process gets it
	// scrubbed (env.go), then Env.
	Environ, Env []string
	// Sink records session starts, ends and the operator's actions.
	Sink Sink
	// Digest is the node's keyed digest (a steer's text never enters an
	// event).
	Digest func([]byte) string
	// OnChange is told that a session's peek changed (the node
	// republishes its row); it must not block.
	OnChange func(session string)
	// Git is the git binary.
	Git    string
	Clock  clock.Clock
	Logger *slog.Logger
}

// DefaultConfig is 8 sessions, a 10 s grace, 24x80 terminals.
func DefaultConfig() Config {
	return Config{Max: 8, Grace: 10 * time.Second, Rows: 24, Cols: 80, Scrollback: 1000, Git: "git",
		Clock: clock.Real{}, Logger: slog.Default()}
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Node == "":
		return errors.New("hosted: Node is required")
	case c.StateDir == "":
		return errors.New("hosted: StateDir is required")
	case c.Max < 1:
		return fmt.Errorf("hosted: --max-hosted %d: give at least 1", c.Max)
	case c.Grace <= 0 || c.Rows == 0 || c.Cols == 0 || c.Scrollback < 0:
		return errors.New("hosted: Grace, Rows and Cols must be positive")
	case c.Sink == nil || c.Clock == nil || c.Logger == nil:
		return errors.New("hosted: Sink, Clock and Logger are required")
	}
	return nil
}

// Spec is one session to start. The node builds it from a built-in
// agent's adapter (presence/adapter.Hoster) or a launcher of its config:
// the argv is never a caller's.
type Spec struct {
	// Agent is the row's agent (an adapter's name, "harn", or the agent a
	// launcher runs); Name is what was asked (the agent or the launcher).
	Agent, Name string
	Argv        []string
	// Dir is where the agent runs (its repository when Worktree is set).
	Dir string
	// Worktree, when set, is a new branch: the agent runs in a new
	// worktree of Dir's repository on it, from Base (default HEAD).
	Worktree, Base string
	// Interrupt and Submit are the agent's keys (adapter.HostSpec).
	Interrupt, Submit []byte
	// TypePrompt, when set, is typed (and submitted) once the agent has
	// drawn its first screen: for an agent that takes no prompt argument.
	TypePrompt string
	// Busy says the agent starts in a turn (it was given a prompt).
	Busy bool
	// DropEnv are variables the agent must not inherit.
	DropEnv []string
	// By is the operator who started it.
	By string
	// Rows and Cols, when set, are the first size of its terminal.
	Rows, Cols uint16
}

// Info is a hosted session as lists show it.
type Info struct {
	ID, Agent, Name, Dir string
	Worktree, Branch     string
	PID                  int
	Started              time.Time
	Attached, Queued     int
	By                   string
}

// Room is the hosting room. New does no I/O; Open reaps what a killed
// node left; Close ends every hosted process.
type Room struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	ended    []*session // the last maxEnded, for late hook events
	wts      []Worktree // the worktrees this node made (state.go)
	closed   bool
	opened   bool

	wg sync.WaitGroup
}

// New builds the room.
func New(cfg Config) (*Room, error) {
	if cfg.Git == "" {
		cfg.Git = "git"
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Room{cfg: cfg, log: cfg.Logger, sessions: map[string]*session{}}, nil
}

// Open makes the state dir, reads what a previous run left and reaps it:
// a hosted process that survived its node (kill -9) is ended, and every
// session the previous run hosted gets its end, saying so.
func (r *Room) Open() error {
	if err := os.MkdirAll(r.cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("hosted: state dir: %w", err)
	}
	if err := os.Chmod(r.cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("hosted: state dir: %w", err)
	}
	st, err := readState(r.cfg.StateDir)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.wts = st.Worktrees
	r.opened = true
	r.mu.Unlock()
	for _, p := range st.Sessions {
		reason := "the node restarted; its hosted process had ended"
		if reapProc(procinfo.Proc{PID: p.PID, Start: p.Start}, r.cfg.Clock) {
			reason = "the node restarted; its hosted process was ended at the start"
		}
		r.log.Info("hosted session of the previous run ended", "session", p.ID, "pid", p.PID, "reason", reason)
		if err := r.cfg.Sink.Ingest([]presence.Event{r.event(p.ID, p.Agent, presence.TypeSessionEnd,
			map[string]any{presence.AttrReason: reason})}); err != nil {
			return fmt.Errorf("hosted: record the end of %s: %w", p.ID, err)
		}
	}
	return r.save()
}

// Start starts spec's agent in a new pseudo-terminal and records its
// session (one row from its start). It returns the session's info.
func (r *Room) Start(spec Spec) (Info, error) {
	if len(spec.Argv) == 0 || spec.Agent == "" {
		return Info{}, fmt.Errorf("%w: no agent to run", ErrBadStart)
	}
	r.mu.Lock()
	switch {
	case r.closed || !r.opened:
		r.mu.Unlock()
		return Info{}, ErrClosed
	case len(r.sessions) >= r.cfg.Max:
		n, oldest := len(r.sessions), ""
		for id := range r.sessions {
			if oldest == "" || id < oldest {
				oldest = id
			}
		}
		r.mu.Unlock()
		return Info{}, fmt.Errorf("%w: node %s hosts %d, its --max-hosted %d; stop one (harn agents stop %s) or raise --max-hosted",
			ErrTooMany, r.cfg.Node, n, r.cfg.Max, oldest)
	}
	r.mu.Unlock()
	dir, err := realDir(spec.Dir)
	if err != nil {
		return Info{}, err
	}
	now := r.cfg.Clock.Now()
	id := "hs-" + strings.ToLower(ids.New(now))
	var wt *Worktree
	if spec.Worktree != "" {
		w, err := r.makeWorktree(dir, spec.Worktree, spec.Base, id, now)
		if err != nil {
			return Info{}, err
		}
		wt, dir = &w, w.Path
	} else if other := r.sharing(dir); other != "" {
		return Info{}, fmt.Errorf("%w: %s is the worktree of hosted session %s; two hosted sessions never share a worktree (give another --dir, or --worktree BRANCH)",
			ErrBadStart, dir, other)
	}
	info, err := r.start(id, spec, dir, wt, now)
	if err != nil && wt != nil {
		r.dropWorktree(*wt) // nothing ran in it
	}
	return info, err
}

// sharing names the live session whose worktree holds dir, if any.
func (r *Room) sharing(dir string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, s := range r.sessions {
		if w := s.worktree; w != "" && (dir == w || strings.HasPrefix(dir, w+string(filepath.Separator))) {
			return id
		}
	}
	return ""
}

func (r *Room) start(id string, spec Spec, dir string, wt *Worktree, now time.Time) (Info, error) {
	bin, err := lookPath(spec.Argv[0], r.cfg.Environ)
	if err != nil {
		return Info{}, fmt.Errorf("%w: %s needs %q on node %s's PATH: %v", ErrBadStart, spec.Name, spec.Argv[0], r.cfg.Node, err)
	}
	cmd := exec.Command(bin, spec.Argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(scrubEnv(r.cfg.Environ, spec.DropEnv), r.cfg.Env...)
	cmd.Env = append(cmd.Env, EnvHostedID+"="+id)
	if !hasEnv(cmd.Env, "TERM") {
		cmd.Env = append(cmd.Env, "TERM=xterm-256color")
	}
	rows, cols := spec.Rows, spec.Cols
	if rows == 0 || cols == 0 {
		rows, cols = r.cfg.Rows, r.cfg.Cols
	}
	s := newSession(r, id, spec, dir, wt, rows, cols, now)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Info{}, ErrClosed
	}
	if len(r.sessions) >= r.cfg.Max {
		r.mu.Unlock()
		return Info{}, fmt.Errorf("%w: node %s hosts its --max-hosted %d", ErrTooMany, r.cfg.Node, r.cfg.Max)
	}
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		r.mu.Unlock()
		return Info{}, fmt.Errorf("%w: start %s: %v", ErrBadStart, spec.Name, err)
	}
	s.cmd, s.pty = cmd, f
	s.proc = procinfo.Proc{PID: cmd.Process.Pid}
	if p, err := procinfo.Lookup(cmd.Process.Pid); err == nil {
		s.proc.Start = p.Start
	}
	r.sessions[id] = s
	r.wg.Add(2)
	go s.readLoop()
	go s.replyLoop()
	r.mu.Unlock()
	attrs := map[string]any{presence.AttrCwd: dir, presence.AttrAgentPID: s.proc.PID, presence.AttrAgentStart: s.proc.Start,
		AttrHosted: true, presence.AttrSource: "hosted", presence.AttrBy: text.Clip(spec.By, 160)}
	if wt != nil {
		attrs[AttrWorktree] = wt.Path
		attrs[presence.AttrBranch] = wt.Branch
		attrs[presence.AttrRepo] = filepath.Base(wt.Repo)
	}
	ev := r.event(id, spec.Agent, presence.TypeSessionStart, attrs)
	ev.TS = now
	if err := r.cfg.Sink.Ingest([]presence.Event{ev}); err != nil {
		s.kill("its start could not be recorded")
		return Info{}, fmt.Errorf("hosted: record the start: %w", err)
	}
	if err := r.save(); err != nil {
		r.log.Warn("hosted: state not saved; a kill -9 of the node would leave this process running", "session", id, "err", err)
	}
	r.log.Info("hosted session started", "session", id, "agent", spec.Name, "dir", dir, "pid", s.proc.PID, "by", spec.By)
	return s.info(), nil
}

// event is one event of the room for session id.
func (r *Room) event(id, agent, typ string, attrs map[string]any) presence.Event {
	now := r.cfg.Clock.Now()
	return presence.Event{ID: ids.New(now), SessionID: id, Type: typ, TS: now, Agent: agent, Attrs: attrs}
}

// record ingests one event of a session, logging a failure (the action
// it records was done).
func (r *Room) record(s *session, typ string, attrs map[string]any) {
	if err := r.cfg.Sink.Ingest([]presence.Event{r.event(s.id, s.spec.Agent, typ, attrs)}); err != nil {
		r.log.Warn("hosted: an action was not recorded", "session", s.id, "type", typ, "err", err)
	}
}

// lookup is the live session id.
func (r *Room) lookup(id string) (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sessions[id]; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("%w: %q on node %s", ErrNoSession, id, r.cfg.Node)
}

// Has reports whether id is a live hosted session of this node.
func (r *Room) Has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id] != nil
}

// List is the live hosted sessions, oldest first.
func (r *Room) List() []Info {
	r.mu.Lock()
	ss := make([]*session, 0, len(r.sessions))
	for _, s := range r.sessions {
		ss = append(ss, s)
	}
	r.mu.Unlock()
	out := make([]Info, 0, len(ss))
	for _, s := range ss {
		out = append(out, s.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Get is one live session's info.
func (r *Room) Get(id string) (Info, bool) {
	s, err := r.lookup(id)
	if err != nil {
		return Info{}, false
	}
	return s.info(), true
}

// ended is told by a session whose process exited.
func (r *Room) endedSession(s *session) {
	r.mu.Lock()
	if r.sessions[s.id] == s {
		delete(r.sessions, s.id)
		r.ended = append(r.ended, s)
		if len(r.ended) > maxEnded {
			r.ended = r.ended[len(r.ended)-maxEnded:]
		}
	}
	r.mu.Unlock()
	if err := r.save(); err != nil {
		r.log.Warn("hosted: state not saved", "err", err)
	}
}

// Close ends every hosted process (SIGTERM, then SIGKILL after a short
// grace: the node's stop is bounded), records their ends, and waits for
// the room's goroutines. Safe twice.
func (r *Room) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.wg.Wait()
		return
	}
	r.closed = true
	live := make([]*session, 0, len(r.sessions))
	for _, s := range r.sessions {
		live = append(live, s)
	}
	r.mu.Unlock()
	for _, s := range live {
		s.stop("the node stopped", min(r.cfg.Grace, closeGrace))
	}
	r.wg.Wait()
}

// realDir is dir, absolute, its symlinks resolved; it must be a directory.
func realDir(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%w: no directory; give --dir DIR", ErrBadStart)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: --dir %s: %v", ErrBadStart, dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("%w: --dir %s does not exist on this node; give a directory that does", ErrBadStart, text.Clip(text.OneLine(dir), 200))
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: --dir %s is not a directory", ErrBadStart, text.Clip(text.OneLine(dir), 200))
	}
	return real, nil
}
