package raftstore

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The feed is what a server hands the nodes that follow the registry
// without holding its log (a watch): the entries it applied lately, in
// index order, bounded in count and bytes, and a signal when more come. A
// follower whose index the feed no longer reaches starts again from a
// snapshot (Registry.Snapshot).

// Feed bounds: the entries and bytes a server keeps for its watchers.
const (
	FeedMaxEntries = 4096
	FeedMaxBytes   = 8 << 20
)

// ErrFeedGap: the feed no longer holds the entries after the index asked
// for; the follower needs a snapshot.
var ErrFeedGap = errors.New("raftstore: the watch is behind what the feed holds; start from a snapshot")

// FeedEntry is one applied registry entry as a follower replays it.
type FeedEntry struct {
	Index      uint64
	AppendedAt time.Time
	// Data is the encoded Command; nil for an entry that is not a
	// command (a configuration change, a barrier): it only advances the
	// index.
	Data []byte
	// Private: the command writes only key-value entries under the
	// store's private prefixes (Config.PrivateKV), which a watcher that
	// is not a server does not get (it gets the index alone).
	Private bool
}

// feed is a Store's ring of recent entries. Safe for concurrent use.
type feed struct {
	mu      sync.Mutex
	entries []FeedEntry // in index order, after base
	bytes   int
	// base is the index before the first entry held: a follower at base
	// or later can continue from the feed.
	base    uint64
	last    uint64
	changed chan struct{} // closed and replaced on every append or reset
}

func newFeed() *feed { return &feed{changed: make(chan struct{})} }

// append records an applied entry (the FSM calls it, in index order).
func (f *feed) append(e FeedEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e.Index <= f.last {
		return
	}
	if e.Data == nil && len(f.entries) > 0 && f.entries[len(f.entries)-1].Data == nil && !e.Private {
		// Consecutive entries that change nothing: keep the last only.
		f.entries[len(f.entries)-1] = e
	} else {
		f.entries = append(f.entries, e)
		f.bytes += len(e.Data)
	}
	f.last = e.Index
	for len(f.entries) > FeedMaxEntries || (f.bytes > FeedMaxBytes && len(f.entries) > 1) {
		f.base = f.entries[0].Index
		f.bytes -= len(f.entries[0].Data)
		f.entries[0] = FeedEntry{}
		f.entries = f.entries[1:]
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// reset forgets every entry: the registry was replaced at index (a
// snapshot install); followers before it start again from a snapshot.
func (f *feed) reset(index uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries, f.bytes, f.base, f.last = nil, 0, index, index
	close(f.changed)
	f.changed = make(chan struct{})
}

// after returns up to max entries after index, the feed's last index,
// and a channel closed when the feed changes. It returns ErrFeedGap when
// the feed no longer reaches index.
func (f *feed) after(index uint64, max int) ([]FeedEntry, uint64, <-chan struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index < f.base {
		return nil, f.last, f.changed, ErrFeedGap
	}
	// entries are in index order: skip those at or before index.
	lo, hi := 0, len(f.entries)
	for lo < hi {
		mid := (lo + hi) / 2
		if f.entries[mid].Index <= index {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	n := min(len(f.entries)-lo, max)
	out := make([]FeedEntry, n)
	copy(out, f.entries[lo:lo+n])
	return out, f.last, f.changed, nil
}

// Watch is one follower's position in a server's feed.
type Watch struct {
	s    *Store
	from uint64
}

// Watch starts a follow of the registry after index from: the entries
// after it (Next), or, when the feed no longer reaches it (or from is
// 0), a snapshot first (NeedSnapshot).
func (s *Store) Watch(from uint64) *Watch { return &Watch{s: s, from: from} }

// Snapshot is the registry now, and the index it reflects; the watch
// continues after it. Without private, the key-value entries under the
// store's private prefixes are left out (a watcher that is not a server).
func (w *Watch) Snapshot(private bool) ([]byte, uint64, error) {
	var hide []string
	if !private {
		hide = w.s.cfg.PrivateKV
	}
	b, idx, err := w.s.reg.SnapshotAt(hide...)
	if err != nil {
		return nil, 0, err
	}
	w.from = idx
	return b, idx, nil
}

// NeedSnapshot reports whether the watch must start from a snapshot.
func (w *Watch) NeedSnapshot() bool {
	if w.from == 0 {
		return true
	}
	_, _, _, err := w.s.feed.after(w.from, 0)
	return err != nil
}

// Next waits until entries after the watch's index exist, ctx ends, wake
// fires or the leader changes, and returns up to max of them (none when
// woken). It
// returns ErrFeedGap when the watch fell behind the feed (send a
// snapshot), ErrClosed when the store closed.
func (w *Watch) Next(ctx context.Context, max int, wake <-chan time.Time) ([]FeedEntry, error) {
	for {
		leader := w.s.LeaderChanged()
		es, _, changed, err := w.s.feed.after(w.from, max)
		if err != nil {
			return nil, err
		}
		if len(es) > 0 {
			w.from = es[len(es)-1].Index
			return es, nil
		}
		select {
		case <-changed:
		case <-leader:
			return nil, nil
		case <-wake:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-w.s.stop:
			return nil, ErrClosed
		}
	}
}

// Index is the index the watch has sent up to.
func (w *Watch) Index() uint64 { return w.from }
