package notify

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// Config tunes the engine. Zero fields take the defaults below.
type Config struct {
	// Debounce is how long a state must hold before it is told (3 s).
	Debounce time.Duration
	// Cooldown is how long after telling a transition the same transition
	// of the same session is not told again, however long the state was
	// away in between (5 min).
	Cooldown time.Duration
	// QueueSize bounds each webhook's queue of waiting messages (256). When
	// it is full the oldest waiting message is dropped and counted.
	QueueSize int
	// MaxAttempts bounds the attempts of one message; 0 means no bound
	// other than MaxAge.
	MaxAttempts int
	// MaxAge is how long after it was queued a message is still retried
	// (24 h).
	MaxAge time.Duration
	// BackoffBase is the first retry's delay before jitter (1 s); each
	// further retry doubles it, up to BackoffMax (5 min).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Jitter turns a backoff delay into the delay waited. The default is
	// "equal jitter": a uniform draw in [d/2, d].
	Jitter func(d time.Duration) time.Duration
	// DesktopOn lists the kinds shown on the desktop; empty means all.
	DesktopOn []Kind
	// DesktopQueue bounds the desktop notifications waiting to be shown
	// (16); more are dropped and counted, so the engine never waits.
	DesktopQueue int
	Logger       *slog.Logger
	// Actions makes the buttons of a needs_input message with an open
	// permission request (Session.Permission set). It is called once per
	// such message, only when a webhook of the ntfy format is told it,
	// under the engine's lock: it must not call the engine. Nil: no
	// buttons.
	Actions func(t Transition) []Action
}

// Defaults.
const (
	DefaultDebounce     = 3 * time.Second
	DefaultCooldown     = 5 * time.Minute
	DefaultQueueSize    = 256
	DefaultMaxAge       = 24 * time.Hour
	DefaultBackoffBase  = time.Second
	DefaultBackoffMax   = 5 * time.Minute
	DefaultDesktopQueue = 16
)

func (c Config) withDefaults() Config {
	if c.Debounce <= 0 {
		c.Debounce = DefaultDebounce
	}
	if c.Cooldown <= 0 {
		c.Cooldown = DefaultCooldown
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.BackoffMax < c.BackoffBase {
		c.BackoffMax = c.BackoffBase
	}
	if c.Jitter == nil {
		c.Jitter = EqualJitter
	}
	if c.DesktopQueue <= 0 {
		c.DesktopQueue = DefaultDesktopQueue
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Backoff is the delay before retry number attempt (1 for the first retry),
// before jitter: BackoffBase doubled per attempt, capped at BackoffMax.
func (c Config) Backoff(attempt int) time.Duration {
	c = c.withDefaults()
	d := c.BackoffBase
	for i := 1; i < attempt; i++ {
		if d >= c.BackoffMax/2 {
			return c.BackoffMax
		}
		d *= 2
	}
	return min(d, c.BackoffMax)
}

// EqualJitter returns a uniform draw in [d/2, d].
func EqualJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Engine turns session views into notifications. It is safe for concurrent
// use. Create it with New and end it with Close.
type Engine struct {
	cfg     Config
	clk     clock.Clock
	sender  Sender
	desktop Desktop
	log     *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	// wg counts every goroutine the engine owns: webhook workers, the
	// desktop worker and pending debounce callbacks.
	wg        sync.WaitGroup
	closeOnce sync.Once

	mu       sync.Mutex
	closed   bool
	sessions map[string]*tracked
	hooks    map[string]*worker
	desk     chan Transition
	deskSt   DesktopStats
}

// tracked is what the engine remembers of one session.
type tracked struct {
	view  Session
	seen  bool // in the last snapshot
	holds map[Kind]*hold
}

// hold is one kind's debounce state for one session.
type hold struct {
	holding  bool
	since    time.Time
	lastSent time.Time
	episode  uint64
	timer    clock.Timer
}

// New starts an engine. A nil clk is the wall clock, a nil sender the
// HTTPSender with its default timeout, and a nil desktop shows nothing.
func New(cfg Config, clk clock.Clock, sender Sender, desktop Desktop) *Engine {
	cfg = cfg.withDefaults()
	if clk == nil {
		clk = clock.Real{}
	}
	if sender == nil {
		sender = NewHTTPSender(0, false)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{cfg: cfg, clk: clk, sender: sender, desktop: desktop, log: cfg.Logger,
		ctx: ctx, cancel: cancel, sessions: map[string]*tracked{}, hooks: map[string]*worker{}}
	if desktop != nil {
		e.desk = make(chan Transition, cfg.DesktopQueue)
		e.wg.Add(1)
		go e.runDesktop()
	}
	return e
}

// Observe takes the full current list of the sessions this node is
// responsible for (see the package doc): every transition since the last
// call starts a debounce, every state that stopped holding cancels its
// pending notification, and sessions missing from the list are gone.
func (e *Engine) Observe(views []Session) {
	now := e.clk.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	present := make(map[string]bool, len(views))
	for _, v := range views {
		id := v.GetSessionId()
		if id == "" || present[id] {
			continue
		}
		present[id] = true
		tr := e.track(id)
		var prev *Session
		if tr.seen {
			p := tr.view
			prev = &p
		}
		tr.view, tr.seen = v, true
		for _, t := range Diff(prev, v) {
			e.start(id, tr.hold(t.Kind), t.Kind, now)
		}
		for k, h := range tr.holds {
			if h.holding && !Holds(v, k) {
				e.stop(h, now)
			}
		}
	}
	for id, tr := range e.sessions {
		if present[id] {
			continue
		}
		tr.seen = false
		idle := true
		for _, h := range tr.holds {
			if h.holding {
				e.stop(h, now)
			}
			if now.Sub(h.lastSent) < e.cfg.Cooldown {
				idle = false
			}
		}
		if idle {
			delete(e.sessions, id)
		}
	}
}

// Baseline records views of sessions the engine has not seen as already
// told: their states hold without a notification. The node calls it once at
// start with the sessions that existed before, so that a restart does not
// repeat what was told before it. Sessions already seen are left as they
// are.
func (e *Engine) Baseline(views []Session) {
	now := e.clk.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	for _, v := range views {
		if v.GetSessionId() == "" {
			continue
		}
		tr := e.track(v.GetSessionId())
		if tr.seen {
			continue
		}
		tr.view, tr.seen = v, true
		for _, k := range Kinds {
			if Holds(v, k) {
				h := tr.hold(k)
				h.holding, h.since, h.lastSent = true, now, now
			}
		}
	}
}

func (e *Engine) track(id string) *tracked {
	tr := e.sessions[id]
	if tr == nil {
		tr = &tracked{holds: map[Kind]*hold{}}
		e.sessions[id] = tr
	}
	return tr
}

func (tr *tracked) hold(k Kind) *hold {
	h := tr.holds[k]
	if h == nil {
		h = &hold{}
		tr.holds[k] = h
	}
	return h
}

// start begins a hold episode and its debounce. The episode may be told
// when it still holds after the debounce window and the cooldown since the
// last message of its kind has passed: a session that needs input again
// 24 s after the last message (the operator answered, the agent asked
// again) is not told again. Callers hold e.mu.
func (e *Engine) start(id string, h *hold, k Kind, now time.Time) {
	if h.holding {
		return
	}
	h.holding, h.since = true, now
	h.episode++
	ep := h.episode
	e.wg.Add(1)
	h.timer = e.clk.AfterFunc(e.cfg.Debounce, func() {
		defer e.wg.Done()
		e.fire(id, k, ep)
	})
}

// stop ends a hold episode and cancels its pending notification. Callers
// hold e.mu.
func (e *Engine) stop(h *hold, now time.Time) {
	h.holding = false
	if h.timer != nil {
		if h.timer.Stop() {
			e.wg.Done()
		}
		h.timer = nil
	}
}

// fire runs when a debounce window ends.
func (e *Engine) fire(id string, k Kind, ep uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	tr := e.sessions[id]
	if tr == nil || !tr.seen {
		return
	}
	h := tr.holds[k]
	if h == nil || h.episode != ep || !h.holding {
		return
	}
	h.timer = nil
	now := e.clk.Now()
	if !h.lastSent.IsZero() && now.Sub(h.lastSent) < e.cfg.Cooldown {
		e.log.Debug("notify: within cooldown", "session", id, "kind", string(k))
		return
	}
	h.lastSent = now
	t := Transition{Kind: k, Session: tr.view, At: h.since}
	if e.cfg.Actions != nil && k == KindNeedsInput && t.Session.Permission != nil && e.ntfyWantsLocked(k) {
		t.Actions = e.cfg.Actions(t)
	}
	for _, w := range e.hooks {
		w.offer(t, now)
	}
	if e.desk != nil && (len(e.cfg.DesktopOn) == 0 || slices.Contains(e.cfg.DesktopOn, k)) {
		select {
		case e.desk <- t:
		default:
			e.deskSt.Dropped++
		}
	}
}

// ntfyWantsLocked reports whether a webhook of the ntfy format is told
// transitions of kind k. Callers hold e.mu.
func (e *Engine) ntfyWantsLocked(k Kind) bool {
	for _, w := range e.hooks {
		w.mu.Lock()
		ok := w.hook.Format == FormatNtfy && w.hook.Wants(k)
		w.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// SetWebhooks replaces the configured webhooks (as read from the registry).
// A webhook whose ID, URL and format are unchanged keeps its queue and
// counts; a removed webhook's waiting messages are discarded. Invalid
// webhooks are skipped and reported in the returned error; the valid ones
// are applied.
func (e *Engine) SetWebhooks(hooks []Webhook) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	var errs []error
	keep := map[string]bool{}
	for _, h := range hooks {
		if err := h.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if keep[h.ID] {
			continue
		}
		keep[h.ID] = true
		if w := e.hooks[h.ID]; w != nil {
			if w.sameTarget(h) {
				w.setHook(h)
				continue
			}
			w.cancel()
		}
		w := newWorker(e, h)
		e.hooks[h.ID] = w
		e.wg.Add(1)
		go w.run()
	}
	for id, w := range e.hooks {
		if !keep[id] {
			w.cancel()
			delete(e.hooks, id)
		}
	}
	return errors.Join(errs...)
}

// ErrClosed: the engine was closed.
var ErrClosed = errors.New("notify: engine closed")

// Stats is what `notify list` and the metrics show.
type Stats struct {
	// Webhooks, sorted by ID.
	Webhooks []WebhookStats
	Desktop  DesktopStats
}

// WebhookStats counts one webhook's messages since it was configured on
// this node.
type WebhookStats struct {
	ID     string
	URL    string // redacted (Webhook.Redacted)
	Format Format
	On     []Kind
	// Queued is waiting messages, the one being delivered included.
	Queued int
	Sent   uint64
	// Failed counts messages given up: a permanent refusal, or retries
	// exhausted.
	Failed uint64
	// Dropped counts messages pushed out of a full queue.
	Dropped uint64
	// Retries counts failed attempts that were retried.
	Retries     uint64
	LastError   string
	LastErrorAt time.Time
}

// DesktopStats counts desktop notifications.
type DesktopStats struct {
	Shown, Failed, Dropped uint64
}

// Stats returns the counts of every webhook and of the desktop.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	out := Stats{Desktop: e.deskSt}
	ws := make([]*worker, 0, len(e.hooks))
	for _, w := range e.hooks {
		ws = append(ws, w)
	}
	e.mu.Unlock()
	for _, w := range ws {
		out.Webhooks = append(out.Webhooks, w.stats())
	}
	sort.Slice(out.Webhooks, func(i, j int) bool { return out.Webhooks[i].ID < out.Webhooks[j].ID })
	return out
}

// Close stops every goroutine of the engine and waits for them; messages
// still queued are discarded. It is safe to call more than once.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		for _, tr := range e.sessions {
			for _, h := range tr.holds {
				if h.timer != nil && h.timer.Stop() {
					e.wg.Done()
				}
				h.timer = nil
			}
		}
		for _, w := range e.hooks {
			w.cancel()
		}
		e.cancel()
		e.mu.Unlock()
		e.wg.Wait()
	})
	return nil
}

func (e *Engine) runDesktop() {
	defer e.wg.Done()
	for {
		select {
		case <-e.ctx.Done():
			return
		case t := <-e.desk:
			err := e.desktop.Notify(e.ctx, Title(t), Text(t))
			e.mu.Lock()
			if err != nil {
				e.deskSt.Failed++
			} else {
				e.deskSt.Shown++
			}
			e.mu.Unlock()
			if err != nil && e.ctx.Err() == nil {
				e.log.Warn("notify: desktop notification failed", "err", err)
			}
		}
	}
}
