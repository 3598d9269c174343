package tasks

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime/agent"
	rcontext "github.com/harn-dev/harn/runtime/context"
	"github.com/harn-dev/harn/util/text"
)

// contextSpace is the ledger keyspace of harn sessions' contexts.
const contextSpace = "context"

// contextStore is the context room's Store over the node's ledger KV.
type contextStore struct{ kv KV }

var _ rcontext.Store = (*contextStore)(nil)

func (s *contextStore) Put(k, v []byte) error { return s.kv.PutKV(contextSpace, k, v) }

func (s *contextStore) PutSync(k, v []byte) error {
	if sk, ok := s.kv.(SyncKV); ok {
		return sk.PutKVSync(contextSpace, k, v)
	}
	return s.kv.PutKV(contextSpace, k, v)
}

func (s *contextStore) Scan(p []byte, fn func(k, v []byte) error) error {
	return s.kv.ScanKV(contextSpace, p, fn)
}

// sharedSync reports whether Sink's ingest and the runtime ledger's
// synced records are fsyncs of KV's own store (Config.IngestSyncsKV): each
// makes every earlier write to KV durable, the context's included.
func (h *Host) sharedSync() bool {
	_, syncs := h.cfg.KV.(SyncKV)
	return h.cfg.Sink != nil && h.cfg.IngestSyncsKV && syncs
}

// newContexts is the node's context room: every harn session's history.
func (h *Host) newContexts() *rcontext.Space {
	return rcontext.NewSpace(&contextStore{kv: h.cfg.KV}, rcontext.Options{Compaction: true, Clock: h.cfg.Clock,
		Logger: h.log, OnCompact: h.compacted, PreviewBytes: h.cfg.Bounds.Norm().ToolPreviewBytes})
}

// compacted records a compaction as the session's context.compacted
// event (lifecycle-neutral), shown by `harn agents trace`.
func (h *Host) compacted(c rcontext.Compaction) {
	attrs := map[string]any{"method": c.Method, "before_tokens": c.Before, "after_tokens": c.After,
		"budget_tokens": c.Budget, "archived_items": c.Archived, "checkpoint": c.Checkpoint}
	if c.Note != "" {
		attrs["note"] = text.Clip(c.Note, 512)
	}
	ev := presence.Event{SessionID: c.Session, Type: presence.TypeContextCompacted, TS: h.cfg.Clock.Now(), Agent: Agent, Attrs: attrs}
	if err := h.emit(ev); err != nil {
		h.log.Warn("context compaction event", "session", c.Session, "err", err)
	}
}

// ContextView is `harn context`'s answer: the report, and with
// providerView the exact messages of the next request, as JSON.
type ContextView struct {
	Report   json.RawMessage
	Provider json.RawMessage
}

// Context describes a harn session's context, from the node's store (a
// session whose loop is gone, after a restart too).
func (h *Host) Context(session string, providerView bool) (ContextView, error) {
	l, err := h.contexts.Lookup(session)
	if errors.Is(err, rcontext.ErrNoSession) || errors.Is(err, rcontext.ErrBadID) {
		return ContextView{}, fmt.Errorf("%w: %s has no harn context on node %s", ErrBadAction, clip(session), h.cfg.Node)
	}
	if err != nil {
		return ContextView{}, err
	}
	var v ContextView
	if v.Report, err = json.Marshal(l.Report()); err != nil {
		return v, err
	}
	if providerView {
		ms := l.ProviderView()
		if ms == nil {
			ms = []agent.Message{}
		}
		if v.Provider, err = json.Marshal(ms); err != nil {
			return v, err
		}
	}
	return v, nil
}

// openContext gives a new harn session its context: a fresh lane, or a
// lane forked from another session's up to upTo (copying nothing):
// rcontext.UpToHead for --fork, rcontext.UpToSystem for a subagent.
// With a Sink that syncs KV (Config.IngestSyncsKV) the lane's records
// are written without an fsync: the caller ingests the session's start
// event before it reports the session open, and that sync covers them.
func (h *Host) openContext(id, workdir, fork string, upTo uint64, llm rcontext.Condenser, compaction bool) (*rcontext.Lane, error) {
	var (
		l   *rcontext.Lane
		err error
	)
	open, forkFn := h.contexts.Open, h.contexts.Fork
	if h.sharedSync() {
		open, forkFn = h.contexts.OpenUnsynced, h.contexts.ForkUnsynced
	}
	if fork != "" {
		if l, err = forkFn(id, fork, upTo); err != nil {
			if upTo == rcontext.UpToSystem {
				return nil, fmt.Errorf("the parent's lane %s: %w", clip(fork), err)
			}
			return nil, fmt.Errorf("%w: --fork %s: %w", ErrBadAction, clip(fork), err)
		}
	} else if l, err = open(id, workdir); err != nil {
		return nil, err
	}
	l.SetCompaction(compaction, llm, workdir)
	return l, nil
}

// compactionOn is a run's LLM compaction: what the run asked for
// (harn ask --compaction[=false]), else the node's compaction.enabled.
func (h *Host) compactionOn(o HarnOptions) bool {
	switch {
	case o.NoCompaction:
		return false
	case o.Compaction:
		return true
	}
	return !h.cfg.NoCompaction
}
