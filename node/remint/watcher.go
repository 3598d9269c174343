package remint

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// maxQueued bounds the sessions whose transcript waits to be read.
const maxQueued = 1024

// Shower tells whether a transcript shows a name (Reader does).
type Shower interface {
	Shows(path, name string) (bool, error)
}

// WatcherConfig is what a Watcher is built with.
type WatcherConfig struct {
	Reader Shower
	// State copies a session's live state.
	State func(id string) (presence.State, bool)
	// Record stores session_name.seen.
	Record func(evs []presence.Event) error
	// Clock tells the time of the events it records; nil is the real
	// clock.
	Clock  clock.Clock
	Logger *slog.Logger
}

// Watcher looks, off the hook's path, for each session whose stored events
// name a transcript and whose re-minted name is pending, whether the agent
// has shown that name there, and records session_name.seen when it has.
// Observe only queues (the latest transcript of each session); one
// goroutine, started by Start and stopped by Close, reads them. A reader
// that needs the answer now (the hook's prompt-time context, its stop)
// calls Settle.
type Watcher struct {
	cfg WatcherConfig

	mu     sync.Mutex
	queued map[string]string        // session -> latest transcript path, not read yet
	busy   map[string]chan struct{} // session -> closed when its read in flight ends
	kick   chan struct{}
	stop   chan struct{}

	wg        sync.WaitGroup
	closeOnce sync.Once
}

// NewWatcher builds a Watcher. It starts nothing.
func NewWatcher(cfg WatcherConfig) *Watcher {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Watcher{cfg: cfg, queued: map[string]string{}, busy: map[string]chan struct{}{},
		kick: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Start runs the reading goroutine; Close stops it and waits for it.
func (w *Watcher) Start() {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.run()
	}()
}

// Close stops the goroutine and waits for it. Safe twice.
func (w *Watcher) Close() {
	w.closeOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
}

// Observe queues the transcripts that stored events name.
func (w *Watcher) Observe(stored []presence.Event) {
	queued := false
	w.mu.Lock()
	for i := range stored {
		p := stored[i].AttrString(presence.AttrTranscriptPath)
		if p == "" {
			continue
		}
		id := stored[i].SessionID
		if _, ok := w.queued[id]; !ok && len(w.queued) >= maxQueued {
			continue // the next event of the session names it again
		}
		w.queued[id] = p
		queued = true
	}
	w.mu.Unlock()
	if queued {
		w.wake()
	}
}

func (w *Watcher) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Settle reads session's queued transcript now, in the caller, or waits
// for its read in flight (bounded by the Reader's timeout), so that the
// session's state says whether its name was shown as of the events stored
// so far.
func (w *Watcher) Settle(session string) {
	for {
		w.mu.Lock()
		if done, ok := w.busy[session]; ok {
			w.mu.Unlock()
			select {
			case <-done:
				continue
			case <-w.stop:
				return
			}
		}
		path, ok := w.queued[session]
		if !ok {
			w.mu.Unlock()
			return
		}
		w.takeLocked(session)
		w.mu.Unlock()
		w.read(session, path)
		return
	}
}

// takeLocked moves session from queued to busy.
func (w *Watcher) takeLocked(session string) {
	delete(w.queued, session)
	w.busy[session] = make(chan struct{})
}

func (w *Watcher) run() {
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
		}
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			session, path, ok := w.next()
			if !ok {
				break
			}
			w.read(session, path)
		}
	}
}

// next takes a queued session whose read is not in flight.
func (w *Watcher) next() (string, string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, p := range w.queued {
		if _, busy := w.busy[id]; busy {
			continue
		}
		w.takeLocked(id)
		return id, p, true
	}
	return "", "", false
}

// read checks one session's transcript and ends its busy mark.
func (w *Watcher) read(session, path string) {
	defer func() {
		w.mu.Lock()
		close(w.busy[session])
		delete(w.busy, session)
		_, again := w.queued[session]
		w.mu.Unlock()
		if again {
			w.wake()
		}
	}()
	st, ok := w.cfg.State(session)
	if !ok || !st.NamePending() {
		return
	}
	name := st.SuggestedSessionName
	seen, err := w.cfg.Reader.Shows(path, name)
	if err != nil {
		lvl := w.cfg.Logger.Debug
		if errors.Is(err, ErrTimeout) {
			lvl = w.cfg.Logger.Warn
		}
		lvl("transcript", "session", session, "err", err)
		return
	}
	if !seen {
		return
	}
	ev := presence.Event{SessionID: session, ParentSessionID: st.ParentSessionID, Type: presence.TypeSessionNameSeen,
		TS: w.cfg.Clock.Now(), Agent: st.Agent, Attrs: map[string]any{presence.AttrName: name}}
	if err := w.cfg.Record([]presence.Event{ev}); err != nil {
		w.cfg.Logger.Warn("session name seen", "session", session, "err", err)
	}
}
