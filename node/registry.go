package node

import (
	"context"
	"sync"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

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

// registryWriter writes the node's sessions to the Raft registry. Start,
// task, lifecycle and end changes are written at once; activity changes are
// coalesced and written every ActivityFlush. A failed write stays pending
// and is retried; the ledger holds the truth meanwhile.
type registryWriter struct {
	c *cluster

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
	// themselves (sync): the background writer leaves those alone.
	holding map[string]int
	flushed chan struct{}
}

func newRegistryWriter(c *cluster) *registryWriter {
	return &registryWriter{c: c, pending: map[string]presence.State{}, lastSent: map[string]regView{},
		holding: map[string]int{}, kick: make(chan struct{}, 1)}
}

// observe records a session's new state. It never blocks.
func (w *registryWriter) observe(s presence.State) {
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

func (w *registryWriter) run() {
	defer w.c.n.wg.Done()
	t := time.NewTicker(w.c.cfg.ActivityFlush)
	defer t.Stop()
	backoff := time.Duration(0)
	for {
		select {
		case <-w.c.n.stop:
			return
		case <-w.kick:
		case <-t.C:
		}
		if backoff > 0 {
			select {
			case <-w.c.n.stop:
				return
			case <-time.After(backoff):
			}
		}
		if err := w.flush(); err != nil {
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			w.c.n.log.Debug("registry write pending", "err", err)
			continue
		}
		backoff = 0
	}
}

// flush writes every pending session in one batch command.
func (w *registryWriter) flush() error {
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

	err := w.write(ups)
	w.mu.Lock()
	defer w.mu.Unlock()
	defer close(done) // after lastSent or pending is updated, before the unlock
	w.inflight, w.flushed = nil, nil
	if err != nil {
		for id, s := range batch {
			if _, newer := w.pending[id]; !newer {
				w.pending[id] = s
			}
		}
		w.hurry = true
		return err
	}
	for id, v := range views {
		w.lastSent[id] = v
	}
	return nil
}

// maxBatch bounds the upserts in one registry command.
const maxBatch = 512

func (w *registryWriter) write(ups []raftstore.Upsert) error {
	for len(ups) > 0 {
		n := min(len(ups), maxBatch)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := w.c.applyCommand(ctx, raftstore.BatchCommand(ups[:n]...))
		cancel()
		if err != nil {
			return err
		}
		ups = ups[n:]
	}
	return nil
}

// hold tells the writer that a declaration is about to write session id
// itself (sync), so that the background writer does not race it. The
// returned func releases the hold.
func (w *registryWriter) hold(id string) func() {
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

// sync writes one session's state now and returns when the registry has
// committed it (used by lifecycle declarations, whose acknowledgement
// means the change survives the loss of this node). The change is written
// once: when the background flush is already writing this very state,
// sync waits for that write; when it is still pending, sync takes it over.
func (w *registryWriter) sync(ctx context.Context, s presence.State) error {
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
	if _, err := w.c.applyCommand(ctx, raftstore.BatchCommand(ups...)); err != nil {
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
	if p, ok := w.pending[id]; ok && viewOf(&p) == v {
		delete(w.pending, id)
	}
	w.mu.Unlock()
	return nil
}

// resync compares every local session with the registry's record and
// queues those that differ (after a restart, or a lost write).
func (w *registryWriter) resync(states []presence.State) {
	for i := range states {
		s := &states[i]
		rec, ok := w.c.store.Get(s.SessionID)
		if ok && recordMatches(&rec, s) {
			w.mu.Lock()
			w.lastSent[s.SessionID] = viewOf(s)
			w.mu.Unlock()
			continue
		}
		w.observe(*s)
	}
}

func recordMatches(r *raftstore.Record, s *presence.State) bool {
	return r.Node == s.Node && r.Agent == s.Agent && r.Name == s.Name && r.ParentSessionID == s.ParentSessionID &&
		r.Task == s.Task && r.TaskState == string(s.TaskState) && r.LifecycleReason == s.LifecycleReason &&
		r.Ended == s.Ended && r.EndReason == s.EndReason && r.Activity == string(s.Activity)
}
