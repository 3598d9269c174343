package raftstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/hashicorp/raft"
)

// MaxSnapshotBytes bounds what Restore reads: a registry of about 100k
// sessions.
const MaxSnapshotBytes = 1 << 30

// fsm adapts a Registry to raft.FSM. It decodes entries, hands them to the
// registry, and tracks the index of the last entry the registry has seen,
// so that readers can wait for it (raft's own AppliedIndex runs ahead of
// the FSM).
type fsm struct {
	reg  *Registry
	log  *slog.Logger
	feed *feed // what the server's watchers follow
	// private are the key-value prefixes withheld from watchers that are
	// not servers (Config.PrivateKV).
	private []string

	mu      sync.Mutex
	applied uint64
	changed chan struct{} // closed and replaced on every advance
}

var (
	_ raft.FSM         = (*fsm)(nil)
	_ raft.FSMSnapshot = (*fsmSnapshot)(nil)
)

func newFSM(reg *Registry, log *slog.Logger) *fsm {
	return &fsm{reg: reg, log: log, feed: newFeed(), changed: make(chan struct{})}
}

// Apply is called by raft, one entry at a time, on its FSM goroutine. The
// returned value is the Apply future's Response: nil or an error.
func (f *fsm) Apply(l *raft.Log) any {
	var out error
	e := FeedEntry{Index: l.Index, AppendedAt: l.AppendedAt}
	if l.Type == raft.LogCommand {
		e.Data = l.Data
		cmd, err := DecodeCommand(l.Data)
		if err == nil {
			e.Private = privateKV(cmd, f.private)
			err = f.reg.ApplyAt(l.Index, l.AppendedAt, cmd)
		}
		if err != nil {
			f.log.Warn("registry entry refused", slog.Uint64(keyIndex, l.Index), slog.Any(keyErr, err))
			out = err
		}
	}
	f.feed.append(e)
	f.advance(l.Index)
	return out
}

func (f *fsm) advance(index uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index <= f.applied {
		return
	}
	f.applied = index
	close(f.changed)
	f.changed = make(chan struct{})
}

// appliedIndex is the index of the last entry the registry reflects.
func (f *fsm) appliedIndex() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// waitApplied blocks until the registry reflects index, ctx ends or stop
// is closed.
func (f *fsm) waitApplied(ctx context.Context, index uint64, stop <-chan struct{}) error {
	for {
		f.mu.Lock()
		applied, ch := f.applied, f.changed
		f.mu.Unlock()
		if applied >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for index %d (applied %d): %w", index, applied, ctx.Err())
		case <-stop:
			return ErrClosed
		}
	}
}

// privateKV reports whether cmd writes key-value entries under private
// prefixes only.
func privateKV(cmd Command, private []string) bool {
	if cmd.Op != OpKV || len(private) == 0 || len(cmd.KV) == 0 {
		return false
	}
	for _, o := range cmd.KV {
		if !hasPrefix(o.Key, private) {
			return false
		}
	}
	return true
}

func hasPrefix(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Snapshot is called on the FSM goroutine; it copies the registry so that
// Persist can run beside later Applies.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	b, err := f.reg.Snapshot()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{data: b}, nil
}

// Restore replaces the registry with a snapshot's content.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxSnapshotBytes+1))
	if err != nil {
		return fmt.Errorf("read registry snapshot: %w", err)
	}
	if len(b) > MaxSnapshotBytes {
		return fmt.Errorf("registry snapshot is larger than %d bytes", MaxSnapshotBytes)
	}
	if err := f.reg.Restore(b); err != nil {
		return err
	}
	f.feed.reset(f.reg.Index())
	f.mu.Lock()
	f.applied = f.reg.Index()
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	return nil
}

type fsmSnapshot struct{ data []byte }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s.data); err != nil {
		sink.Cancel()
		return fmt.Errorf("write registry snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
