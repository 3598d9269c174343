package sessions

import (
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/harn-dev/harn/node/clockguard"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// Ledger is the durable record the Store writes to and folds from
// (*ledger.Ledger).
type Ledger interface {
	Append(evs []presence.Event) (ledger.AppendResult, error)
	Session(id string) ([]presence.Event, error)
	ForEachSession(fn func(id string, evs []presence.Event) error) error
	GetMeta(key string) ([]byte, error)
	PutMeta(key string, val []byte) error
}

// Config is what a Store is built with.
type Config struct {
	// Node is this node's name, stamped on every event.
	Node   string
	Ledger Ledger
	Clock  clock.Clock
	Logger *slog.Logger
	// Tracer traces ingests (spans SpanIngest, SpanAppend, SpanFold); nil
	// traces nothing.
	Tracer trace.Tracer
}

// Change is one session's state after a write.
type Change struct {
	State presence.State
	Hash  string
	// Gen grows with every change of the session: of two writes that race,
	// the one with the higher Gen is the newer state.
	Gen uint64
}

// Batch is what one ingest changed, told to every subscriber.
type Batch struct {
	// Start is when the ingest began.
	Start time.Time
	// Stored are the events stored now (duplicates left out).
	Stored []presence.Event
	// Changed are the sessions whose state changed, sorted by id.
	Changed []Change
	// Clamped are the events whose future time the clock guard replaced
	// (node/clockguard), stored now or duplicates of stored ones.
	Clamped []clockguard.Clamped
}

// Subscriber is told of every write, outside the Store's lock, in the
// goroutine that wrote. It may read the Store and ingest again.
type Subscriber func(Batch)

// View is a cached encoding of a session for a reader (the roster's JSON),
// and the key it was made with. A change of the session clears it.
type View struct {
	Bytes []byte
	Key   time.Time
}

// entry is one session's live state.
type entry struct {
	state presence.State
	hash  string
	gen   uint64
	view  View
}

// Store is the room. Build it with New, fold the ledger into it with
// Rebuild; it starts no goroutine and needs no Close.
type Store struct {
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer

	mu        sync.Mutex
	sessions  map[string]*entry // sessions with stored events
	reserved  map[string]string // session -> name given, first events not stored yet
	liveNames map[string]string // name -> session: live sessions and reservations
	mutLocks  sessionLocks      // serializes operator mutations, per session

	subs atomic.Pointer[[]Subscriber]
}

// New builds a Store. It does no I/O.
func New(cfg Config) *Store {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tr := cfg.Tracer
	if tr == nil {
		tr = noop.NewTracerProvider().Tracer("")
	}
	return &Store{cfg: cfg, log: cfg.Logger, tracer: tr, sessions: map[string]*entry{},
		reserved: map[string]string{}, liveNames: map[string]string{}}
}

// Subscribe adds fn to the subscribers; they are told in the order they
// subscribed.
func (s *Store) Subscribe(fn Subscriber) {
	for {
		old := s.subs.Load()
		var next []Subscriber
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, fn)
		if s.subs.CompareAndSwap(old, &next) {
			return
		}
	}
}

func (s *Store) notify(b Batch) {
	if subs := s.subs.Load(); subs != nil {
		for _, fn := range *subs {
			fn(b)
		}
	}
}

// Rebuild folds every session in the ledger into its live state.
func (s *Store) Rebuild() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Ledger.ForEachSession(func(id string, evs []presence.Event) error {
		st := presence.Fold(evs)
		s.sessions[id] = &entry{state: st, hash: presence.PresenceHash(&st)}
		if !st.Ended && st.Name != "" {
			s.liveNames[st.Name] = id
		}
		return nil
	})
}

// Len is the number of sessions, ended ones included.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// State copies a session's live state.
func (s *Store) State(id string) (presence.State, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[id]
	if !ok {
		return presence.State{}, false
	}
	return e.state, true
}

// Live copies the states of live sessions.
func (s *Store) Live() []presence.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]presence.State, 0, len(s.sessions))
	for _, e := range s.sessions {
		if !e.state.Ended {
			out = append(out, e.state)
		}
	}
	return out
}

// EachLive calls fn, under the lock, for each live session with its state
// and presence hash. fn must not keep st, nor call the Store.
func (s *Store) EachLive(fn func(st *presence.State, hash string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.sessions {
		if !e.state.Ended {
			fn(&e.state, e.hash)
		}
	}
}

// Views calls fn, under the lock, for each session (all, or the live ones)
// with its state and its cached view, which fn may replace. fn must not
// keep st, nor call the Store.
func (s *Store) Views(all bool, fn func(st *presence.State, v *View)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.sessions {
		if !all && e.state.Ended {
			continue
		}
		fn(&e.state, &e.view)
	}
}

// Invalidate clears a session's cached view (something outside its state,
// a harn task, changed) and returns its state and hash; ok is false for a
// session the Store does not hold.
func (s *Store) Invalidate(id string) (st presence.State, hash string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.sessions[id]
	if e == nil {
		return presence.State{}, "", false
	}
	e.view = View{}
	return e.state, e.hash, true
}

// Sessions copies the states of all sessions (all) or the live ones,
// sorted by start time then id.
func (s *Store) Sessions(all bool) []presence.State {
	s.mu.Lock()
	states := make([]presence.State, 0, len(s.sessions))
	for _, e := range s.sessions {
		if !all && e.state.Ended {
			continue
		}
		states = append(states, e.state)
	}
	s.mu.Unlock()
	// Sort by index: a State is large, and moving it costs more than
	// comparing it (the alerts room reads every session each second).
	idx := make([]int32, len(states))
	for i := range idx {
		idx[i] = int32(i)
	}
	sort.Slice(idx, func(i, j int) bool {
		a, b := &states[idx[i]], &states[idx[j]]
		if !a.StartedAt.Equal(b.StartedAt) {
			return a.StartedAt.Before(b.StartedAt)
		}
		return a.SessionID < b.SessionID
	})
	out := make([]presence.State, len(states))
	for i, k := range idx {
		out[i] = states[k]
	}
	return out
}
