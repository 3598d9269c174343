package raftstore

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// A Mirror is the registry of a node that is not a raft member: it
// replays what a server's watch sends (a snapshot, then the entries after
// it, through the same deterministic Registry the servers apply), so its
// reads are a server's replica as of the last entry that arrived. It
// knows the leader and its staleness from the server's progress reports,
// and says its reads are stale when no server spoke for StaleAfter.

// MirrorConfig configures a Mirror.
type MirrorConfig struct {
	// StaleAfter: reads are stale when no server reported for this long
	// (default 6 s).
	StaleAfter time.Duration
	// File, when set, keeps the mirror's last view across restarts: it is
	// loaded at NewMirror (and reported stale until a server speaks) and
	// written, at most every SaveEvery, after it changed, and at Close.
	File      string
	SaveEvery time.Duration
	Clock     clock.Clock
}

// Progress is what a server reports of the registry.
type Progress struct {
	// Server is the reporting server.
	Server string
	// Leader is the leader it knows ("" when none); Term and CommitIndex
	// its raft state.
	Leader            string
	Term, CommitIndex uint64
	// Applied is the index the server's replica reflects.
	Applied uint64
	// Stale: the server has not heard from a leader lately; LeaderContact
	// is how long ago it did (0 on the leader, -1 never).
	Stale         bool
	LeaderContact time.Duration
	// Servers is the raft configuration.
	Servers []Server
}

// Mirror is a registry followed from a server. Safe for concurrent use.
type Mirror struct {
	cfg MirrorConfig
	reg *Registry

	mu       sync.Mutex
	applied  uint64
	changed  chan struct{} // closed and replaced when applied or the leader changes
	progress Progress
	heard    time.Time // when a server last spoke (the mirror's clock); zero: never
	dirty    bool      // changed since the last save
	saved    time.Time

	stop      chan struct{}
	closeOnce sync.Once
}

// DefaultMirrorStaleAfter is MirrorConfig.StaleAfter's default.
const DefaultMirrorStaleAfter = 6 * time.Second

// NewMirror returns an empty mirror, or the view saved in cfg.File (a
// view that cannot be read is dropped: the watch starts from a snapshot).
func NewMirror(cfg MirrorConfig) *Mirror {
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultMirrorStaleAfter
	}
	if cfg.SaveEvery <= 0 {
		cfg.SaveEvery = time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	m := &Mirror{cfg: cfg, reg: NewRegistry(), changed: make(chan struct{}), stop: make(chan struct{})}
	if cfg.File != "" {
		if b, err := readBounded(cfg.File, MaxSnapshotBytes); err == nil && m.reg.Restore(b) == nil {
			m.applied = m.reg.Index()
		}
	}
	m.progress.LeaderContact = -1
	return m
}

// Restore replaces the view with a server's snapshot.
func (m *Mirror) Restore(b []byte) error {
	if err := m.reg.Restore(b); err != nil {
		return err
	}
	m.mu.Lock()
	m.applied = m.reg.Index()
	m.dirty = true
	m.signalLocked()
	m.mu.Unlock()
	return nil
}

// Apply replays one entry of the server's feed. Entries at or before the
// view's index are skipped; an entry's refusal (a command every replica
// refuses alike) is the Registry's, and the index advances either way.
func (m *Mirror) Apply(e FeedEntry) {
	m.mu.Lock()
	if e.Index <= m.applied {
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	if e.Data != nil {
		if cmd, err := DecodeCommand(e.Data); err == nil {
			_ = m.reg.ApplyAt(e.Index, e.AppendedAt, cmd)
		}
	}
	m.mu.Lock()
	m.applied = e.Index
	m.dirty = true
	m.signalLocked()
	m.mu.Unlock()
}

// Reset forgets the view: the next watch starts from a snapshot.
func (m *Mirror) Reset() {
	m.reg.Restore(emptySnapshot)
	m.mu.Lock()
	m.applied, m.dirty = 0, true
	m.signalLocked()
	m.mu.Unlock()
}

// emptySnapshot is the snapshot of an empty registry.
var emptySnapshot, _ = NewRegistry().Snapshot()

// Report records a server's progress report, and that it spoke now. A
// report without the raft configuration or term (one sent with entries)
// keeps those of the last report that had them.
func (m *Mirror) Report(p Progress) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(p.Servers) == 0 {
		p.Servers = m.progress.Servers
	}
	if p.Term == 0 {
		p.Term, p.CommitIndex = m.progress.Term, m.progress.CommitIndex
	}
	leaderChanged := p.Leader != m.progress.Leader
	m.progress = p
	m.heard = m.cfg.Clock.Now()
	if leaderChanged {
		m.signalLocked()
	}
}

func (m *Mirror) signalLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Applied is the index the view reflects (a watch resumes after it).
func (m *Mirror) Applied() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applied
}

// Source is the server whose report came last ("" before any).
func (m *Mirror) Source() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.progress.Server
}

// LastProgress is the last server report.
func (m *Mirror) LastProgress() Progress {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.progress
	p.Servers = append([]Server(nil), p.Servers...)
	return p
}

// Staleness says how fresh the view is: the leader the last report
// named, and the time since the leader was heard from through it (the
// report's age plus the server's own contact), stale when no server spoke
// for StaleAfter or the server itself was stale.
func (m *Mirror) Staleness() ReadInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	info := ReadInfo{LeaderID: m.progress.Leader, AppliedIndex: m.applied, LastContact: -1, Stale: true}
	if m.heard.IsZero() {
		return info
	}
	age := m.cfg.Clock.Now().Sub(m.heard)
	if m.progress.LeaderContact >= 0 {
		info.LastContact = age + m.progress.LeaderContact
	}
	info.Stale = m.progress.Leader == "" || m.progress.Stale || age > m.cfg.StaleAfter
	return info
}

// Leader is the leader the last report named, and "" for its address
// (a mirror dials no raft address).
func (m *Mirror) Leader() (id, addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.progress.Leader, ""
}

// IsLeader is false: a mirror is never the leader.
func (m *Mirror) IsLeader() bool { return false }

// WaitForLeader waits until a report names a leader.
func (m *Mirror) WaitForLeader(ctx context.Context) error {
	for {
		m.mu.Lock()
		leader, ch := m.progress.Leader, m.changed
		m.mu.Unlock()
		if leader != "" {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
		case <-m.stop:
			return ErrClosed
		}
	}
}

// WaitForApplied waits until the view reflects index (read-your-writes:
// pass the index Apply returned).
func (m *Mirror) WaitForApplied(ctx context.Context, index uint64) error {
	for {
		m.mu.Lock()
		applied, ch := m.applied, m.changed
		m.mu.Unlock()
		if applied >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for index %d (applied %d): %w", index, applied, ctx.Err())
		case <-m.stop:
			return ErrClosed
		}
	}
}

// SaveIfDue writes the view to File when it changed and SaveEvery passed
// since the last save (the watch calls it after it applies).
func (m *Mirror) SaveIfDue() error {
	m.mu.Lock()
	due := m.cfg.File != "" && m.dirty && m.cfg.Clock.Now().Sub(m.saved) >= m.cfg.SaveEvery
	m.mu.Unlock()
	if !due {
		return nil
	}
	return m.save()
}

func (m *Mirror) save() error {
	if m.cfg.File == "" {
		return nil
	}
	b, _, err := m.reg.SnapshotAt()
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.dirty, m.saved = false, m.cfg.Clock.Now()
	m.mu.Unlock()
	return writeFileAtomic(m.cfg.File, b)
}

// Close ends the waits and saves the view. Safe twice.
func (m *Mirror) Close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.stop)
		m.mu.Lock()
		dirty := m.dirty
		m.mu.Unlock()
		if dirty {
			err = m.save()
		}
	})
	return err
}

// The registry's reads, as a Store's.

func (m *Mirror) Get(id string) (Record, bool)                     { return m.reg.Get(id) }
func (m *Mirror) List() []Record                                   { return m.reg.List() }
func (m *Mirror) Records() []Record                                { return m.reg.Records() }
func (m *Mirror) KVGet(key string) (KVEntry, bool)                 { return m.reg.KVGet(key) }
func (m *Mirror) KVList(prefix string) []KVEntry                   { return m.reg.KVList(prefix) }
func (m *Mirror) KVIndex() uint64                                  { return m.reg.KVIndex() }
func (m *Mirror) ClaimOf(repo, path string) (Claim, bool)          { return m.reg.ClaimOf(repo, path) }
func (m *Mirror) ClaimsOf(session string) []Claim                  { return m.reg.ClaimsOf(session) }
func (m *Mirror) Claims() []Claim                                  { return m.reg.Claims() }
func (m *Mirror) NotifyHooks() ([]NotifyHook, uint64)              { return m.reg.NotifyHooks() }
func (m *Mirror) Admit(node string, ids []string) map[string]error { return m.reg.Admit(node, ids) }
func (m *Mirror) SessionQuota() int                                { return m.reg.SessionQuota() }
func (m *Mirror) LiveSessions(node string) int                     { return m.reg.LiveSessions(node) }

// readBounded reads a file of at most max bytes.
func readBounded(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, max)
	}
	return b, nil
}

// writeFileAtomic writes b to p (0600) through a synced temporary file.
func writeFileAtomic(p string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
