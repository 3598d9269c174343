package hosted

import (
	"fmt"
	"sync"

	"github.com/harn-dev/harn/util/text"
)

// Sub is one attach to a hosted terminal: the current screen first, then
// what the agent draws, in order; input and resizes go the other way
// unless it may only watch. Close detaches (the agent goes on).
type Sub struct {
	s        *session
	out      chan []byte
	readOnly bool
	by       string

	once   sync.Once
	done   chan struct{}
	mu     sync.Mutex
	reason string
}

// Attach subscribes to session id's terminal. screen paints what it shows
// now; Output brings every byte drawn after it, without a gap or a
// repeat. A read-only attach may not type or resize. rows and cols (when
// set) resize the terminal for a read-write attach.
func (r *Room) Attach(id string, readOnly bool, rows, cols uint16, by string) (sub *Sub, screen []byte, err error) {
	s, err := r.lookup(id)
	if err != nil {
		return nil, nil, err
	}
	if !readOnly && rows > 0 && cols > 0 {
		s.resize(rows, cols)
	}
	sub = &Sub{s: s, out: make(chan []byte, subBuffer), readOnly: readOnly, by: by, done: make(chan struct{})}
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: %s has ended", ErrNoSession, id)
	default:
	}
	s.subs[sub] = struct{}{}
	if !readOnly {
		s.writers.Add(1)
	}
	screen = s.screenLocked()
	s.mu.Unlock()
	mode := "read-write"
	if readOnly {
		mode = "read-only"
	}
	r.record(s, TypeAttach, map[string]any{"by": text.Clip(by, 160), "mode": mode})
	return sub, screen, nil
}

// Output is what the agent draws after the screen Attach returned.
func (sub *Sub) Output() <-chan []byte { return sub.out }

// Done is closed when the attach ends: a detach, the agent's exit, or an
// attach that fell behind.
func (sub *Sub) Done() <-chan struct{} { return sub.done }

// Reason says why the attach ended.
func (sub *Sub) Reason() string {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.reason
}

// ReadOnly says whether this attach may only watch.
func (sub *Sub) ReadOnly() bool { return sub.readOnly }

// Write types what the attached person typed.
func (sub *Sub) Write(b []byte) error {
	if sub.readOnly {
		return ErrReadOnly
	}
	if len(b) > MaxInput {
		return fmt.Errorf("hosted: one input of %d bytes is over %d", len(b), MaxInput)
	}
	return sub.s.write(b)
}

// Resize follows the attached terminal's size.
func (sub *Sub) Resize(rows, cols uint16) error {
	if sub.readOnly {
		return ErrReadOnly
	}
	sub.s.resize(rows, cols)
	return nil
}

// Close detaches; the agent goes on. Safe twice.
func (sub *Sub) Close() {
	s := sub.s
	s.mu.Lock()
	if _, ok := s.subs[sub]; ok {
		delete(s.subs, sub)
		if !sub.readOnly {
			s.writers.Add(-1)
		}
	}
	s.mu.Unlock()
	sub.end("detached")
}

func (sub *Sub) end(reason string) {
	sub.once.Do(func() {
		sub.mu.Lock()
		sub.reason = reason
		sub.mu.Unlock()
		close(sub.done)
	})
}
