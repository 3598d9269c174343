// Package dirtrust is the node's room of directory trust: which project
// directories the user trusted on this node, each with a digest of the
// files that run or load from it (.harn/mcp.json, .harn/agents,
// .harn/skills, .harn/hooks), recorded 0600 in the data dir; the check a
// harn session's open asks (Check); and the snapshot of those files that
// the session then loads, so that what runs is what was digested. A
// changed file is untrusted until trusted again; a directory another uid
// owns, or that others may write, is trusted only with AllowOtherOwner.
package dirtrust

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/secretfile"
)

// FileName is the record's name in the data dir.
const FileName = "trusted-dirs.json"

// Bounds.
const (
	// MaxEntries bounds the trusted directories of one node.
	MaxEntries = 4096
	maxRecord  = 4 << 20
	maxBy      = 128
)

// Errors.
var (
	ErrConfig = errors.New("dirtrust: config")
	// ErrOtherOwner: the directory (or its .harn) is another uid's, or
	// others may write it; trust needs AllowOtherOwner.
	ErrOtherOwner = errors.New("dirtrust: owned by another user")
	// ErrChanged: the files changed since the digest the caller showed.
	ErrChanged = errors.New("dirtrust: the files changed")
	// ErrUnreadable: the directory's files cannot be read whole (over the
	// bounds), so they cannot be trusted.
	ErrUnreadable = errors.New("dirtrust: the files cannot be read whole")
	// ErrFull: MaxEntries directories are trusted already.
	ErrFull   = errors.New("dirtrust: too many trusted directories")
	ErrClosed = errors.New("dirtrust: closed")
	ErrNotDir = errors.New("dirtrust: not a directory")
)

// Config builds a Store.
type Config struct {
	Path  string      // the record file (required): DATA_DIR/FileName
	Clock clock.Clock // default clock.Real
	UID   int         // the node's uid: what it owns is its own (root's too)
}

// DefaultConfig is the record in dataDir, the real clock and this
// process's uid.
func DefaultConfig(dataDir string) Config {
	return Config{Path: filepath.Join(dataDir, FileName), Clock: clock.Real{}, UID: os.Geteuid()}
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.Path == "" || !filepath.IsAbs(c.Path) {
		return fmt.Errorf("%w: the record needs an absolute path, not %q", ErrConfig, c.Path)
	}
	return nil
}

// Entry is one trusted directory.
type Entry struct {
	Dir        string    `json:"dir"`    // absolute, symlinks resolved
	Digest     string    `json:"digest"` // of its files when trusted
	AddedAt    time.Time `json:"added_at"`
	By         string    `json:"by,omitempty"`
	OtherOwner bool      `json:"other_owner,omitempty"` // trusted with AllowOtherOwner
}

type record struct {
	Version int     `json:"version"`
	Dirs    []Entry `json:"dirs"`
}

// Store is the node's trusted directories. New does no I/O; Open reads
// the record; Close is safe twice. It is safe for concurrent use.
type Store struct {
	cfg    Config
	mu     sync.Mutex
	opened bool
	closed bool
	dirs   map[string]Entry
}

// New checks cfg; it does no I/O.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Store{cfg: cfg, dirs: map[string]Entry{}}, nil
}

// Open reads the record (none yet: no directory is trusted). A record
// others may read or write is refused, naming the fix.
func (s *Store) Open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	f, err := os.Open(s.cfg.Path)
	if errors.Is(err, os.ErrNotExist) {
		s.opened = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("dirtrust: %w", err)
	}
	defer f.Close()
	if err := secretfile.Check(s.cfg.Path); err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return fmt.Errorf("dirtrust: %s: %w", s.cfg.Path, err)
	}
	if len(b) > maxRecord {
		return fmt.Errorf("%w: %s is over %d bytes", ErrConfig, s.cfg.Path, maxRecord)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil || r.Version != 1 {
		return fmt.Errorf("%w: %s is not a record of trusted directories (%v); move it away, and the node starts trusting no directory", ErrConfig, s.cfg.Path, err)
	}
	for _, e := range r.Dirs {
		if len(s.dirs) >= MaxEntries {
			break
		}
		if filepath.IsAbs(e.Dir) {
			s.dirs[filepath.Clean(e.Dir)] = e
		}
	}
	s.opened = true
	return nil
}

// Close forgets the record; the file stays. Safe twice.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// List is the trusted directories, by path.
func (s *Store) List() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Entry, 0, len(s.dirs))
	for _, e := range s.dirs {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}

func (s *Store) entry(dir string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.dirs[dir]
	return e, ok
}

// AddOptions are how a directory is trusted.
type AddOptions struct {
	// AllowOtherOwner trusts a directory another uid owns, or that others
	// may write (the --allow-other-owner flag); without it such a
	// directory is refused.
	AllowOtherOwner bool
	// Digest, when set, is the digest the user was shown (the TUI's
	// question): files that changed since are refused.
	Digest string
	By     string // who trusted it (the local operator)
}

// Add trusts dir with the digest of its files now, and records it
// durably before it returns. It returns the entry and the check it made.
func (s *Store) Add(dir string, o AddOptions) (Entry, Verdict, error) {
	v, err := s.Check(dir)
	if err != nil {
		return Entry{}, v, err
	}
	switch {
	case v.Unreadable != "":
		return Entry{}, v, fmt.Errorf("%w: %s: %s", ErrUnreadable, v.Dir, v.Unreadable)
	case v.Owner != "" && !o.AllowOtherOwner:
		return Entry{}, v, fmt.Errorf("%w: %s: %s; trust it only if you trust that user: `harn trust add --allow-other-owner %s`",
			ErrOtherOwner, secretfile.ShellQuote(v.Dir), v.Owner, secretfile.ShellQuote(v.Dir))
	case o.Digest != "" && o.Digest != v.Digest:
		return Entry{}, v, fmt.Errorf("%w: %s changed since you were shown them; look again", ErrChanged, secretfile.ShellQuote(v.Dir))
	}
	by := o.By
	if len(by) > maxBy {
		by = by[:maxBy]
	}
	e := Entry{Dir: v.Dir, Digest: v.Digest, AddedAt: s.cfg.Clock.Now().UTC(), By: by, OtherOwner: v.Owner != ""}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, v, ErrClosed
	}
	old, had := s.dirs[e.Dir]
	if !had && len(s.dirs) >= MaxEntries {
		return Entry{}, v, fmt.Errorf("%w: %d already; remove some first (harn trust list shows them)", ErrFull, MaxEntries)
	}
	s.dirs[e.Dir] = e
	if err := s.saveLocked(); err != nil {
		if had {
			s.dirs[e.Dir] = old
		} else {
			delete(s.dirs, e.Dir)
		}
		return Entry{}, v, err
	}
	v.Trusted, v.Why, v.Entry = true, "", &e
	return e, v, nil
}

// Remove forgets dir (its resolved path, or the path as recorded when
// the directory is gone); false when it was not trusted.
func (s *Store) Remove(dir string) (bool, error) {
	keys := []string{}
	if abs, err := filepath.Abs(dir); err == nil {
		keys = append(keys, filepath.Clean(abs))
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			keys = append(keys, real)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, ErrClosed
	}
	removed := map[string]Entry{}
	for _, k := range keys {
		if e, ok := s.dirs[k]; ok {
			removed[k] = e
			delete(s.dirs, k)
		}
	}
	if len(removed) == 0 {
		return false, nil
	}
	if err := s.saveLocked(); err != nil {
		for k, e := range removed {
			s.dirs[k] = e
		}
		return false, err
	}
	return true, nil
}

// saveLocked writes the record whole: a 0600 temp file beside it, synced,
// renamed over it, the folder synced. A failed write (a full disk) leaves
// the previous record.
func (s *Store) saveLocked() error {
	r := record{Version: 1, Dirs: make([]Entry, 0, len(s.dirs))}
	for _, e := range s.dirs {
		r.Dirs = append(r.Dirs, e)
	}
	sort.Slice(r.Dirs, func(i, j int) bool { return r.Dirs[i].Dir < r.Dirs[j].Dir })
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	tmp := s.cfg.Path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("dirtrust: record: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	if werr == nil {
		werr = f.Chmod(0o600)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, s.cfg.Path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("dirtrust: record: %w", werr)
	}
	if d, err := os.Open(filepath.Dir(s.cfg.Path)); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("dirtrust: record: %w", err)
		}
	}
	return nil
}
