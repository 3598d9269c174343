// Package registry is the node's registry writer: it writes the node's
// sessions to the Raft-replicated registry. It owns the coalescing of
// activity changes, the urgent writes (start, task, lifecycle, end), the
// hold and sync that lifecycle declarations use to write their own change,
// and the retries of failed writes. It writes through an Applier (the
// node's leader-forwarding path) and never sees the node.
package registry

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// Applier applies a registry command on the leader and returns its index
// (the node's leader-forwarding path).
type Applier interface {
	Apply(ctx context.Context, cmd raftstore.Command) (uint64, error)
}

// Records reads the registry's local replica.
type Records interface {
	Get(id string) (raftstore.Record, bool)
}

// Config configures a Writer.
type Config struct {
	// ActivityFlush is how often coalesced activity changes are written.
	ActivityFlush time.Duration
	// WriteTimeout bounds one background write.
	WriteTimeout time.Duration
	Clock        clock.Clock
	Logger       *slog.Logger
	// Admit, when set, tells before a write which of this node's
	// sessions the registry would refuse (another node holds the id, or
	// the node is at the mesh's session quota): nil for each it takes.
	// A refused session is left out of the batch, so that it does not
	// hold back the others, and is told to OnRefused once per reason.
	Admit func(node string, ids []string) map[string]error
	// OnRefused is told of each session Admit refuses (once per session
	// and reason); nil logs only.
	OnRefused func(session string, err error)
}

// regView is what the registry records of a session, per field group.
// Comparing views tells which groups changed since the last write.
type regView struct {
	identity  raftstore.IdentityPatch
	task      string
	lifecycle raftstore.LifecyclePatch
	activity  string
	ended     bool
	endReason string
}

func viewOf(s *presence.State) regView {
	return regView{
		identity:  raftstore.IdentityPatch{ParentSessionID: s.ParentSessionID, Node: s.Node, Agent: s.Agent, Name: s.Name, StartedAt: s.StartedAt},
		task:      s.Task,
		lifecycle: raftstore.LifecyclePatch{TaskState: string(s.TaskState), Reason: s.LifecycleReason},
		activity:  string(s.Activity),
		ended:     s.Ended, endReason: s.EndReason,
	}
}

// upserts returns one upsert per changed group, each stamped with that
// group's own event time, so that the registry's per-group clocks order
// them exactly as the reducer did.
func upserts(s *presence.State, prev *regView) []raftstore.Upsert {
	v := viewOf(s)
	first := prev == nil
	var out []raftstore.Upsert
	at := func(t time.Time) time.Time {
		if t.IsZero() {
			if !s.StartedAt.IsZero() {
				return s.StartedAt
			}
			return s.LastEventAt
		}
		return t
	}
	if first || prev.identity != v.identity {
		id := v.identity
		// Identity can change after the start (a name, a parent learnt
		// late): stamp it with the newest event time, never the start.
		out = append(out, raftstore.Upsert{SessionID: s.SessionID, TS: at(s.LastEventAt), Identity: &id})
	}
	if first || prev.task != v.task {
		out = append(out, raftstore.Upsert{SessionID: s.SessionID, TS: at(s.LastEventAt), Task: &raftstore.TaskPatch{Text: v.task}})
	}
	if first || prev.lifecycle != v.lifecycle {
		lc := v.lifecycle
		out = append(out, raftstore.Upsert{SessionID: s.SessionID, TS: at(s.TaskStateUpdatedAt), Lifecycle: &lc})
	}
	if first || prev.ended != v.ended || prev.endReason != v.endReason {
		t := s.EndedAt
		if !v.ended {
			t = s.LastEventAt
		}
		out = append(out, raftstore.Upsert{SessionID: s.SessionID, TS: at(t), End: &raftstore.EndPatch{Ended: v.ended, Reason: v.endReason}})
	}
	if first || prev.activity != v.activity {
		out = append(out, raftstore.Upsert{SessionID: s.SessionID, TS: at(s.ActivityUpdatedAt), Activity: &raftstore.ActivityPatch{Activity: v.activity}})
	}
	return out
}

// urgent reports whether a change must reach the registry at once: start,
// task, lifecycle and end do; activity alone is coalesced.
func urgent(prev *regView, v regView) bool {
	if prev == nil {
		return true
	}
	return prev.identity != v.identity || prev.task != v.task || prev.lifecycle != v.lifecycle ||
		prev.ended != v.ended || prev.endReason != v.endReason
}

// Writer writes the node's sessions to the Raft registry. Start,
// task, lifecycle and end changes are written at once; activity changes are
// coalesced and written every ActivityFlush. A failed write stays pending
// and is retried; the ledger holds the truth meanwhile.
type Writer struct {
	cfg Config
	to  Applier

	mu       sync.Mutex
	pending  map[string]presence.State
	hurry    bool
	lastSent map[string]regView
	kick     chan struct{}
	// inflight holds the views the running flush writes, and flushed is
	// closed when that flush ends, so that sync waits for a write already
	// on its way instead of committing the same change a second time.
	inflight map[string]regView
	// holding counts, per session, declarations about to write it
	// themselves (Sync): the background writer leaves those alone.
	holding map[string]int
	flushed chan struct{}
	// refused holds, per session Admit refuses, the reason last told.
	refused map[string]string
}

// New returns a writer that writes through to.
func New(cfg Config, to Applier) *Writer {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	return &Writer{cfg: cfg, to: to, pending: map[string]presence.State{}, lastSent: map[string]regView{},
		holding: map[string]int{}, refused: map[string]string{}, kick: make(chan struct{}, 1)}
}

// Observe records a session's new state. It never blocks.
func (w *Writer) Observe(s presence.State) {
	w.mu.Lock()
	prev, ok := w.lastSent[s.SessionID]
	var pp *regView
	if ok {
		pp = &prev
	}
	v := viewOf(&s)
	if ok && prev == v {
		delete(w.pending, s.SessionID)
		w.mu.Unlock()
		return
	}
	w.pending[s.SessionID] = s
	hurry := urgent(pp, v) && w.holding[s.SessionID] == 0
	w.hurry = w.hurry || hurry
	w.mu.Unlock()
	if hurry {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// Run writes until stop closes: urgent changes at once, the rest every
// ActivityFlush, failed writes again with backoff. The caller owns the
// goroutine.
func (w *Writer) Run(stop <-chan struct{}) {
	t := w.cfg.Clock.NewTicker(w.cfg.ActivityFlush)
	defer t.Stop()
	backoff := time.Duration(0)
	for {
		select {
		case <-stop:
			return
		case <-w.kick:
		case <-t.C():
		}
		if backoff > 0 && !clock.Sleep(w.cfg.Clock, backoff, stop) {
			return
		}
		if err := w.Flush(); err != nil {
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			w.cfg.Logger.Debug("registry write pending", "err", err)
			continue
		}
		backoff = 0
	}
}

// Flush writes every pending session in one batch command.
func (w *Writer) Flush() error {
	w.mu.Lock()
	if len(w.pending) == 0 {
		w.hurry = false
		w.mu.Unlock()
		return nil
	}
	batch := w.pending
	w.pending = make(map[string]presence.State, len(batch))
	w.hurry = false
	for id, s := range batch {
		if w.holding[id] > 0 { // its declaration writes it
			w.pending[id] = s
			delete(batch, id)
		}
	}
	tell := w.admitLocked(batch)
	var ups []raftstore.Upsert
	views := make(map[string]regView, len(batch))
	for id, s := range batch {
		var pp *regView
		if prev, ok := w.lastSent[id]; ok {
			pp = &prev
		}
		ups = append(ups, upserts(&s, pp)...)
		views[id] = viewOf(&s)
	}
	done := make(chan struct{})
	w.inflight, w.flushed = views, done
	w.mu.Unlock()
	w.tell(tell)

	err := w.write(ups)
	w.mu.Lock()
	w.inflight, w.flushed = nil, nil
	if err != nil {
		// Sessions the leader refused are told of and left out, as the
		// replica's own refusals are; the rest are written again.
		refused := raftstore.RefusedSessions(err)
		var told []refusal
		for id, s := range batch {
			if e, ok := refused[id]; ok {
				told = w.refusedLocked(told, id, e)
				continue
			}
			if _, newer := w.pending[id]; !newer {
				w.pending[id] = s
			}
		}
		w.hurry = true
		close(done) // after pending is updated, before the unlock
		w.mu.Unlock()
		w.tell(told)
		return err
	}
	for id, v := range views {
		w.lastSent[id] = v
		delete(w.refused, id)
	}
	close(done)
	w.mu.Unlock()
	return nil
}

// maxBatch bounds the upserts in one registry command.
const maxBatch = 512

func (w *Writer) write(ups []raftstore.Upsert) error {
	for len(ups) > 0 {
		n := min(len(ups), maxBatch)
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.WriteTimeout)
		_, err := w.to.Apply(ctx, raftstore.BatchCommand(ups[:n]...))
		cancel()
		if err != nil {
			return err
		}
		ups = ups[n:]
	}
	return nil
}

// Hold tells the writer that a declaration is about to write session id
// itself (sync), so that the background writer does not race it. The
// returned func releases the hold.
func (w *Writer) Hold(id string) func() {
	w.mu.Lock()
	w.holding[id]++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if w.holding[id]--; w.holding[id] <= 0 {
			delete(w.holding, id)
		}
		hurry := len(w.pending) > 0 && w.hurry
		w.mu.Unlock()
		if hurry {
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
	}
}

// Sync writes one session's state now and returns when the registry has
// committed it (used by lifecycle declarations, whose acknowledgement
// means the change survives the loss of this node). The change is written
// once: when the background flush is already writing this very state,
// Sync waits for that write; when it is still pending, Sync takes it over.
func (w *Writer) Sync(ctx context.Context, s presence.State) error {
	id, v := s.SessionID, viewOf(&s)
	w.mu.Lock()
	for {
		iv, ok := w.inflight[id]
		if !ok || iv != v {
			break
		}
		done := w.flushed
		w.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock() // written (lastSent is v now) or failed (pending again)
	}
	if tell, err := w.admitOneLocked(s); err != nil {
		w.mu.Unlock()
		w.tell(tell)
		return err
	}
	var pp *regView
	if prev, ok := w.lastSent[id]; ok {
		pp = &prev
	}
	ups := upserts(&s, pp)
	claimed := false
	if p, ok := w.pending[id]; ok && viewOf(&p) == v {
		delete(w.pending, id)
		claimed = true
	}
	w.mu.Unlock()
	if len(ups) == 0 {
		return nil
	}
	if _, err := w.to.Apply(ctx, raftstore.BatchCommand(ups...)); err != nil {
		if e, ok := raftstore.RefusedSessions(err)[id]; ok {
			// The leader refused it (this node's replica lagged): told of
			// once, and not written again until it changes.
			w.mu.Lock()
			tell := w.refusedLocked(nil, id, e)
			w.mu.Unlock()
			w.tell(tell)
			return err
		}
		if claimed { // hand it back to the background writer
			w.mu.Lock()
			if _, newer := w.pending[id]; !newer {
				w.pending[id] = s
			}
			w.hurry = true
			w.mu.Unlock()
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
		return err
	}
	w.mu.Lock()
	w.lastSent[id] = v
	delete(w.refused, id)
	if p, ok := w.pending[id]; ok && viewOf(&p) == v {
		delete(w.pending, id)
	}
	w.mu.Unlock()
	return nil
}

// Resync compares every local session with the registry's record and
// queues those that differ (after a restart, or a lost write).
func (w *Writer) Resync(states []presence.State, recs Records) {
	for i := range states {
		s := &states[i]
		rec, ok := recs.Get(s.SessionID)
		if ok && RecordMatches(&rec, s) {
			w.mu.Lock()
			w.lastSent[s.SessionID] = viewOf(s)
			w.mu.Unlock()
			continue
		}
		w.Observe(*s)
	}
}

// RecordMatches reports whether the registry's record holds what the
// registry keeps of s.
func RecordMatches(r *raftstore.Record, s *presence.State) bool {
	return r.Node == s.Node && r.Agent == s.Agent && r.Name == s.Name && r.ParentSessionID == s.ParentSessionID &&
		r.Task == s.Task && r.TaskState == string(s.TaskState) && r.LifecycleReason == s.LifecycleReason &&
		r.Ended == s.Ended && r.EndReason == s.EndReason && r.Activity == string(s.Activity)
}

// refusal is a session Admit refused, to tell of outside the lock.
type refusal struct {
	session string
	err     error
}

// admitLocked drops from batch the sessions the registry would refuse and
// returns those not told of yet. Caller holds w.mu.
func (w *Writer) admitLocked(batch map[string]presence.State) []refusal {
	if w.cfg.Admit == nil || len(batch) == 0 {
		return nil
	}
	byNode := map[string][]string{}
	for id, s := range batch {
		byNode[s.Node] = append(byNode[s.Node], id)
	}
	var out []refusal
	for node, ids := range byNode {
		sort.Strings(ids) // the quota admits in a fixed order
		for id, err := range w.cfg.Admit(node, ids) {
			if err == nil {
				continue // told again only after a write of it succeeds
			}
			delete(batch, id)
			out = w.refusedLocked(out, id, err)
		}
	}
	return out
}

// admitOneLocked is admitLocked for one session's Sync: the refusal is
// its error. Caller holds w.mu.
func (w *Writer) admitOneLocked(s presence.State) ([]refusal, error) {
	if w.cfg.Admit == nil {
		return nil, nil
	}
	err := w.cfg.Admit(s.Node, []string{s.SessionID})[s.SessionID]
	if err == nil {
		return nil, nil
	}
	return w.refusedLocked(nil, s.SessionID, err), err
}

// refusedLocked adds a refusal to out unless it was told already.
func (w *Writer) refusedLocked(out []refusal, id string, err error) []refusal {
	if w.refused[id] == err.Error() {
		return out
	}
	w.refused[id] = err.Error()
	return append(out, refusal{id, err})
}

// tell logs each refusal at this node and hands it to OnRefused.
func (w *Writer) tell(rs []refusal) {
	for _, r := range rs {
		w.cfg.Logger.Warn("registry write refused at this node", "session", r.session, "err", r.err)
		if w.cfg.OnRefused != nil {
			w.cfg.OnRefused(r.session, r.err)
		}
	}
}
