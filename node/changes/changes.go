// Package changes is the node's change broadcaster: readers that show
// live state (the web board's event streams) subscribe, and the node
// notifies whenever a heartbeat is written, a peer's gossiped presence
// changes or the registry applies an entry. A subscription is one channel
// with room for one signal: notifications that arrive while one is
// pending coalesce into it, so a notifier never blocks and a slow reader
// costs nothing but a missed duplicate.
//
// The broadcaster runs no goroutine of its own; Notify runs on the
// caller's. Close ends every subscription (their channels close) and
// refuses new ones.
package changes

import (
	"sync"
	"sync/atomic"
)

// Broadcaster tells subscribers that something changed. The zero value is
// not usable; make one with New.
type Broadcaster struct {
	// n is the number of live subscriptions: Notify without any costs one
	// atomic load.
	n atomic.Int64
	// seq counts notifications (tests, metrics).
	seq atomic.Uint64

	mu     sync.Mutex
	subs   map[*sub]struct{}
	closed bool
}

type sub struct {
	ch   chan struct{}
	once sync.Once
}

// New returns a broadcaster without subscribers.
func New() *Broadcaster {
	return &Broadcaster{subs: map[*sub]struct{}{}}
}

// Subscribe returns a channel that receives a signal after every change
// (coalesced: at most one is pending), and the func that ends the
// subscription and closes the channel. The func is safe to call twice
// and after Close. After Close, Subscribe returns a closed channel.
func (b *Broadcaster) Subscribe() (<-chan struct{}, func()) {
	s := &sub{ch: make(chan struct{}, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		close(s.ch)
		return s.ch, func() {}
	}
	b.subs[s] = struct{}{}
	b.n.Add(1)
	b.mu.Unlock()
	return s.ch, func() { b.drop(s) }
}

func (b *Broadcaster) drop(s *sub) {
	b.mu.Lock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		b.n.Add(-1)
	}
	b.mu.Unlock()
	s.end()
}

// end drops a pending signal and closes the channel, once: an ended
// subscription reads as closed at once.
func (s *sub) end() {
	s.once.Do(func() {
		select {
		case <-s.ch:
		default:
		}
		close(s.ch)
	})
}

// Notify signals every subscriber. It never blocks: a subscriber that
// has a signal pending keeps that one.
func (b *Broadcaster) Notify() {
	b.seq.Add(1)
	if b.n.Load() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
}

// Seq is the number of notifications so far.
func (b *Broadcaster) Seq() uint64 { return b.seq.Load() }

// Subscribers is the number of live subscriptions.
func (b *Broadcaster) Subscribers() int { return int(b.n.Load()) }

// Close ends every subscription (their channels close) and makes later
// subscriptions closed at once. It is safe to call twice.
func (b *Broadcaster) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	subs := b.subs
	b.subs = map[*sub]struct{}{}
	b.n.Store(0)
	b.mu.Unlock()
	for s := range subs {
		s.end()
	}
}
