package node

import (
	"context"
	"sync"

	"github.com/harn-dev/harn/node/heartbeat"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/presence"
)

// Ingest errors (the sessions room's).
var (
	ErrUnknownSession = sessions.ErrUnknownSession
	ErrAmbiguous      = sessions.ErrAmbiguous
)

// Span names of ingest (see node/tracing and node/sessions).
const (
	spanIngest = sessions.SpanIngest
	spanAppend = sessions.SpanAppend
	spanFold   = sessions.SpanFold
)

// Ingest validates evs, gives new sessions a name, stores the events
// durably (idempotent by id) and folds them into the live states
// (node/sessions). It returns after the events are in a synced WAL.
func (n *Node) Ingest(evs []presence.Event) (ledger.AppendResult, error) {
	if err := n.hosts.Tie(evs); err != nil {
		return ledger.AppendResult{}, err
	}
	return n.sess.Ingest(context.Background(), evs)
}

// IngestContext is Ingest traced under ctx's span.
func (n *Node) IngestContext(ctx context.Context, evs []presence.Event) (ledger.AppendResult, error) {
	if err := n.hosts.Tie(evs); err != nil {
		return ledger.AppendResult{}, err
	}
	return n.sess.Ingest(ctx, evs)
}

// subscribe wires the sessions room's subscribers, in the order each
// write is told to them: the heartbeat files, the cluster (registry writer
// and gossip), the alerts, the task host, the clock guard's diagnostics,
// the transcript watcher, the metrics. Each one checks at each write
// whether its room is open yet.
func (n *Node) subscribe() {
	hb := &heartbeatSub{proj: n.proj, last: map[string]uint64{}}
	n.sess.Subscribe(hb.changed)
	n.sess.Subscribe(func(b sessions.Batch) {
		if n.cl != nil {
			for _, c := range b.Changed {
				n.cl.Publish(c.State, c.Hash, true, true)
			}
		}
	})
	n.sess.Subscribe(func(b sessions.Batch) {
		if len(b.Stored) > 0 && n.alerts != nil {
			n.alerts.Changed()
		}
	})
	n.sess.Subscribe(func(b sessions.Batch) {
		if n.tasks != nil {
			n.tasks.Observe(b.Stored) // an external agent's turn ending ends its harn task
		}
	})
	n.sess.Subscribe(func(b sessions.Batch) {
		n.hosts.Observe(b.Stored) // a hosted agent's turn ending types its held follow-up
	})
	n.sess.Subscribe(func(b sessions.Batch) {
		// A write announced in a turn that ended without its end did not
		// run: the claims room releases what it took.
		if len(b.Stored) > 0 {
			n.taskSvc.ObserveClaimCalls(context.Background(), b.Stored)
		}
	})
	n.sess.Subscribe(func(b sessions.Batch) { n.keep.NoteClamped(b.Clamped, b.Stored) })
	n.sess.Subscribe(func(b sessions.Batch) { n.seen.Observe(b.Stored) })
	n.sess.Subscribe(func(b sessions.Batch) {
		for i := range b.Stored {
			n.metrics.Ingested(b.Stored[i].Agent, b.Stored[i].Type)
		}
		n.metrics.ObserveIngest(n.cfg.Clock.Now().Sub(b.Start))
	})
}

// heartbeatSub marks changed sessions for the heartbeat files, the newest
// state of each last: two writes of one session that race may reach it in
// either order.
type heartbeatSub struct {
	proj *heartbeat.Projector
	mu   sync.Mutex
	last map[string]uint64 // session -> Gen marked last
}

func (h *heartbeatSub) changed(b sessions.Batch) {
	if len(b.Changed) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range b.Changed {
		if c.Gen <= h.last[c.State.SessionID] {
			continue
		}
		h.last[c.State.SessionID] = c.Gen
		h.proj.Mark(c.State)
	}
}

// PendingName is session's re-minted name when the agent has not shown it
// and has not been asked for it yet (sessions.Store.PendingName), after
// the transcripts its events named are read.
func (n *Node) PendingName(session string) string {
	n.seen.Settle(session)
	return n.sess.PendingName(session)
}

// Sessions copies the states of all sessions (all) or the live ones,
// sorted by start time then id.
func (n *Node) Sessions(all bool) []presence.State { return n.sess.Sessions(all) }

// Resolve finds one of this node's sessions by its id, a unique prefix of
// its id, or its name (with or without "Agent ", any case).
func (n *Node) Resolve(handle string) (presence.State, error) { return n.sess.Resolve(handle) }
