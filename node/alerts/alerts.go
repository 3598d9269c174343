// Package alerts is the node's notifications room: it decides which
// sessions this node tells the world about and when, feeds them to the
// notifications engine (node/notify), keeps the engine's webhooks equal to
// the ones the registry holds for the whole mesh, and tells waiters
// (`harn agents wait`) that something changed.
//
// Exactly once, by the owner: the room feeds the engine this node's own
// live sessions, and, only while this node leads the registry (or, with no
// leader, is the first reachable server by name: Mesh.Leading), the live
// sessions of nodes the mesh knows to be unreachable (an unreachable node
// cannot tell anyone about itself). See DESIGN.md in this folder.
package alerts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/notify"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// Defaults.
const (
	// DefaultTick is how often the room looks again without a change:
	// silence and unreachability grow with time alone.
	DefaultTick = time.Second
	// DefaultSilenceAfter is the silence rule's threshold, as `harn agents
	// list` shows it by default.
	DefaultSilenceAfter = 5 * time.Minute
)

// Config configures a Room.
type Config struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// Engine tunes the notifications engine (debounce, cooldown, queues,
	// backoff).
	Engine notify.Config
	// Sender delivers webhook messages (nil: HTTP).
	Sender notify.Sender
	// Desktop shows desktop notifications of needs_input (nil: none).
	Desktop notify.Desktop
	// SilenceAfter is the silence rule's threshold (0: DefaultSilenceAfter;
	// negative: never silent).
	SilenceAfter time.Duration
	// Tick is how often the room looks without a change (0: DefaultTick).
	Tick time.Duration
	// Link returns a session's page on the board ("" without a board).
	Link func(session string) string
	// Permission returns the permission request a session of this node
	// waits on (nil when none is open).
	Permission func(session string) *notify.Permission
	// Actions makes the Approve and Deny buttons of a needs_input message
	// for an ntfy webhook (notify.Config.Actions); nil: no buttons.
	Actions func(t notify.Transition) []notify.Action
}

// Sessions is what the room reads of the node's own sessions.
type Sessions interface {
	// Own returns this node's live sessions.
	Own() []presence.State
}

// Mesh is what the room reads of the mesh; nil for a node without one.
type Mesh interface {
	// Leading reports whether this node announces unreachable nodes now:
	// it leads the registry, or there is no leader and it is the first by
	// name of the servers it can reach.
	Leading() bool
	// Leader names the registry's leader this node knows of ("" when
	// none).
	Leader() string
	// Unreachable returns the live sessions of the nodes the mesh knows
	// and cannot reach now.
	Unreachable() []Remote
	// Webhooks returns the registry's webhook configurations and the log
	// index of their last change.
	Webhooks() ([]raftstore.NotifyHook, uint64)
}

// Remote is a session of another node, with since when that node cannot
// be reached.
type Remote struct {
	State presence.State
	Since time.Time
}

// Room is the notifications room. Build it with New, call Baseline once
// with the sessions that existed before, run Run in a goroutine the node
// owns, and Close it after Run returned.
type Room struct {
	cfg  Config
	log  *slog.Logger
	clk  clock.Clock
	eng  *notify.Engine
	src  Sessions
	mesh Mesh

	kick chan struct{}

	obsMu sync.Mutex // one observe at a time; taken before mu

	chMu    sync.Mutex
	changed chan struct{} // closed and replaced on every change

	mu       sync.Mutex // guards what follows (Run's goroutine and Sync)
	hooksAt  uint64
	hooksSet bool
	hooks    []notify.Webhook
	leading  bool
	// prevLeader is the last other leader this node knew of, and
	// followerAt the last time it looked and did not lead (at first, when
	// the room was built).
	prevLeader string
	followerAt time.Time
	// lessFrom and lessTo bound the last stretch this node saw, while it
	// followed, with no leader at all: another server announced then
	// (Mesh.Leading), the dead leader's sessions too.
	lessFrom, lessTo time.Time
	badLogged        uint64
}

// New builds a room and its engine. It starts the engine's workers (a
// desktop worker when a Desktop is given); Close stops them.
func New(cfg Config, src Sessions, mesh Mesh) *Room {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SilenceAfter == 0 {
		cfg.SilenceAfter = DefaultSilenceAfter
	}
	if cfg.Tick <= 0 {
		cfg.Tick = DefaultTick
	}
	ec := cfg.Engine
	ec.Logger = cfg.Logger
	if cfg.Actions != nil {
		ec.Actions = cfg.Actions
	}
	if len(ec.DesktopOn) == 0 {
		ec.DesktopOn = []notify.Kind{notify.KindNeedsInput}
	}
	return &Room{cfg: cfg, log: cfg.Logger, clk: cfg.Clock, src: src, mesh: mesh,
		eng:  notify.New(ec, cfg.Clock, cfg.Sender, cfg.Desktop),
		kick: make(chan struct{}, 1), changed: make(chan struct{}), followerAt: cfg.Clock.Now()}
}

// Baseline records the node's sessions at start as already told, so that
// a restart does not repeat what was told before it.
func (r *Room) Baseline(own []presence.State) {
	now := r.clk.Now()
	views := make([]notify.Session, 0, len(own))
	for i := range own {
		views = append(views, r.ownView(&own[i], now))
	}
	r.eng.Baseline(views)
}

// Changed tells the room that a session of this node changed: it looks
// again at once, and waiters wake. It never blocks; it is safe on a nil
// room.
func (r *Room) Changed() {
	if r == nil {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
	r.chMu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.chMu.Unlock()
}

// Resolved tells the room that a session of this node left a state on an
// operator's answer: it looks again before it returns, so that a
// notification pending for the request is dropped now, not at the next
// look (its debounce could fire in between). Safe on a nil room.
func (r *Room) Resolved() {
	if r == nil {
		return
	}
	r.observe()
	r.Changed()
}

// Changes returns a channel that closes at the next Changed.
func (r *Room) Changes() <-chan struct{} {
	r.chMu.Lock()
	defer r.chMu.Unlock()
	return r.changed
}

// Run looks at the sessions on every change and every Tick until stop
// closes.
func (r *Room) Run(stop <-chan struct{}) {
	t := r.clk.NewTicker(r.cfg.Tick)
	defer t.Stop()
	for {
		r.Sync()
		r.observe()
		select {
		case <-stop:
			return
		case <-t.C():
		case <-r.kick:
		}
	}
}

// observe feeds the engine the full list of sessions this node is
// responsible for now. One look at a time: a look that read older
// sessions must not feed them after a newer one.
func (r *Room) observe() {
	r.obsMu.Lock()
	defer r.obsMu.Unlock()
	now := r.clk.Now()
	own := r.src.Own()
	views := make([]notify.Session, 0, len(own))
	for i := range own {
		views = append(views, r.ownView(&own[i], now))
	}
	r.mu.Lock()
	leading := r.mesh != nil && r.mesh.Leading()
	became := leading && !r.leading
	r.leading = leading
	if !leading && r.mesh != nil {
		r.followerAt = now
		if l := r.mesh.Leader(); l != "" {
			r.prevLeader = l
			r.lessFrom, r.lessTo = time.Time{}, time.Time{}
		} else {
			if r.lessFrom.IsZero() {
				r.lessFrom = now
			}
			r.lessTo = now
		}
	}
	prev, followerAt, lessFrom, lessTo := r.prevLeader, r.followerAt, r.lessFrom, r.lessTo
	r.mu.Unlock()
	if leading {
		var told []notify.Session
		for _, rm := range r.mesh.Unreachable() {
			v := r.linked(remoteView(&rm))
			views = append(views, v)
			// A node that was unreachable for a whole debounce window
			// while this node still followed was told about by the
			// leader then, unless it was that leader. The dead leader
			// was told about too when, after it went, a leaderless
			// stretch this node followed through lasted a whole window:
			// the first reachable server announced it then.
			if !became {
				continue
			}
			byLeader := rm.State.Node != prev && (rm.Since.IsZero() || followerAt.Sub(rm.Since) > r.debounce())
			from := lessFrom
			if rm.Since.After(from) {
				from = rm.Since
			}
			leaderless := !lessFrom.IsZero() && lessTo.Sub(from) > r.debounce()
			if byLeader || leaderless {
				told = append(told, v)
			}
		}
		if len(told) > 0 {
			r.eng.Baseline(told)
		}
	}
	r.eng.Observe(views)
}

func (r *Room) debounce() time.Duration {
	if r.cfg.Engine.Debounce > 0 {
		return r.cfg.Engine.Debounce
	}
	return notify.DefaultDebounce
}

// ownView is how the engine sees one of this node's sessions now.
func (r *Room) ownView(st *presence.State, now time.Time) notify.Session {
	v := sessionView(st)
	v.Reachable = true
	if r.cfg.SilenceAfter > 0 {
		v.SilentSinceUnixNano = api.UnixNano(presence.SilentSince(st, now, r.cfg.SilenceAfter))
	}
	if r.cfg.Permission != nil && st.Activity == presence.ActivityNeedsInput {
		v.Permission = r.cfg.Permission(st.SessionID)
	}
	return r.linked(v)
}

// linked is v with its board link.
func (r *Room) linked(v notify.Session) notify.Session {
	if r.cfg.Link != nil {
		v.Link = r.cfg.Link(v.SessionId)
	}
	return v
}

// remoteView is how the engine sees a session of an unreachable node: no
// silence (its evidence stopped with its node), unreachable since then.
func remoteView(rm *Remote) notify.Session {
	v := sessionView(&rm.State)
	v.Reachable, v.UnreachableSinceUnixNano = false, api.UnixNano(rm.Since)
	return v
}

// sessionView is a state as the engine sees it, through its roster row;
// reachability and silence are the caller's.
func sessionView(st *presence.State) notify.Session {
	v := notify.SessionOf(api.RowOf(st))
	v.Reachable, v.SilentSinceUnixNano = false, 0
	return v
}

// Sync makes the engine's webhooks those of the registry, when they
// changed since the last Sync.
func (r *Room) Sync() {
	if r.mesh == nil {
		return
	}
	raw, at := r.mesh.Webhooks()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hooksSet && at == r.hooksAt {
		return
	}
	hooks, err := DecodeHooks(raw)
	if err != nil && r.badLogged != at {
		r.badLogged = at
		r.log.Warn("notify: skipped webhooks the registry holds", "index", at, "err", err)
	}
	if err := r.eng.SetWebhooks(hooks); err != nil {
		r.log.Warn("notify: set webhooks", "err", err)
		return
	}
	r.hooks, r.hooksAt, r.hooksSet = hooks, at, true
	r.log.Info("notify: webhooks configured", "webhooks", len(hooks), "index", at)
}

// Webhooks returns the webhooks the engine has now.
func (r *Room) Webhooks() []notify.Webhook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.Webhook(nil), r.hooks...)
}

// Stats returns this node's delivery counts.
func (r *Room) Stats() notify.Stats { return r.eng.Stats() }

// Close stops the engine: pending notifications and queued messages are
// discarded. Call it after Run returned. It is safe twice.
func (r *Room) Close() error { return r.eng.Close() }

// ErrBadHook: the registry holds a webhook this build cannot use.
var ErrBadHook = errors.New("alerts: unusable webhook in the registry")

// EncodeHook is a webhook's registry specification: its JSON, after it
// is validated.
func EncodeHook(w notify.Webhook) ([]byte, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// DecodeHooks reads the registry's webhook configurations. A spec that is
// not a valid webhook, or whose ID is not the registry's key, is skipped
// and reported in the error; the others are returned, sorted by ID.
func DecodeHooks(raw []raftstore.NotifyHook) ([]notify.Webhook, error) {
	out := make([]notify.Webhook, 0, len(raw))
	var errs []error
	for _, h := range raw {
		dec := json.NewDecoder(bytes.NewReader(h.Spec))
		dec.DisallowUnknownFields()
		var w notify.Webhook
		if err := dec.Decode(&w); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrBadHook, h.ID, err))
			continue
		}
		if err := w.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrBadHook, h.ID, err))
			continue
		}
		if w.ID != h.ID {
			errs = append(errs, fmt.Errorf("%w: %s: spec names %s", ErrBadHook, h.ID, w.ID))
			continue
		}
		out = append(out, w)
	}
	return out, errors.Join(errs...)
}
