// Package ledger is the node's durable canonical event record, kept in
// Pebble. One session's events are one contiguous key range, in append
// order; an event id index makes ingestion idempotent. An append is
// acknowledged only after its batch is in a synced WAL; concurrent appends
// share syncs through Pebble's commit pipeline.
package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/harn-dev/harn/presence"
)

// Key prefixes. Session ids never contain NUL (presence validation).
const (
	pfxEvent = 'e' // e\x00<session>\x00<seq:8 BE> -> event JSON
	pfxIndex = 'i' // i\x00<event id> -> <session>\x00<seq:8 BE>
	pfxDiag  = 'd' // d\x00<seq:8 BE> -> diagnostic JSON
	pfxMeta  = 'm' // m\x00<key> -> value
)

// Errors.
var (
	ErrClosed   = errors.New("ledger is closed")
	ErrInFlight = errors.New("an append of the same event id failed; retry")
)

// Config configures a Ledger.
type Config struct {
	// Dir is the Pebble directory.
	Dir string
	// Logger receives Pebble's and the ledger's logs.
	Logger *slog.Logger
	// InMemory keeps the ledger in memory (tests only; nothing is durable).
	InMemory bool
	// NoSync skips WAL syncs (benchmarks of the bare path only).
	NoSync bool
}

// DefaultConfig returns a Config for dir.
func DefaultConfig(dir string) Config {
	return Config{Dir: dir, Logger: slog.Default()}
}

// Validate checks the Config.
func (c Config) Validate() error {
	if c.Dir == "" && !c.InMemory {
		return errors.New("ledger: Dir is required")
	}
	return nil
}

// Ledger is the event store. It is safe for concurrent use.
type Ledger struct {
	cfg  Config
	db   *pebble.DB
	wopt *pebble.WriteOptions

	mu       sync.Mutex
	nextSeq  map[string]uint64
	inflight map[string]*flight
	diagSeq  uint64
	closed   bool
}

type flight struct {
	done chan struct{}
	err  error
}

// Open opens (creating if needed) the ledger.
func Open(cfg Config) (*Ledger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	opts := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{cfg.Logger},
	}
	// Every Append looks its event ids up in the index, and almost always
	// finds nothing: bloom filters answer those misses without reading
	// data blocks, so an Append's cost does not grow with the ledger.
	// Tables written without filters (older ledgers) are still read.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	if cfg.InMemory {
		opts.FS = vfs.NewMem()
	}
	db, err := pebble.Open(cfg.Dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", cfg.Dir, err)
	}
	l := &Ledger{cfg: cfg, db: db, wopt: pebble.Sync,
		nextSeq: map[string]uint64{}, inflight: map[string]*flight{}}
	if cfg.NoSync {
		l.wopt = pebble.NoSync
	}
	if err := l.loadDiagSeq(); err != nil {
		db.Close()
		return nil, err
	}
	return l, nil
}

// Close closes the ledger. It is safe to call twice.
func (l *Ledger) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	return l.db.Close()
}

// DB exposes the Pebble handle for benchmarks beside the bare library.
func (l *Ledger) DB() *pebble.DB { return l.db }

func eventKey(session string, seq uint64) []byte {
	k := make([]byte, 0, len(session)+11)
	k = append(k, pfxEvent, 0)
	k = append(k, session...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

func sessionBounds(session string) (lo, hi []byte) {
	lo = append([]byte{pfxEvent, 0}, session...)
	lo = append(lo, 0)
	hi = append([]byte{pfxEvent, 0}, session...)
	hi = append(hi, 1)
	return lo, hi
}

func indexKey(id string) []byte {
	return append([]byte{pfxIndex, 0}, id...)
}

// AppendResult reports what an Append stored.
type AppendResult struct {
	// Stored are the events written now, with their seq assigned.
	Stored []presence.Event
	// Duplicates counts events whose id was already in the ledger.
	Duplicates int
}

// Append stores evs durably. Each must have an id and pass validation;
// events whose id is already stored are skipped. The call returns after a
// synced commit.
func (l *Ledger) Append(evs []presence.Event) (AppendResult, error) {
	var res AppendResult
	b := l.db.NewBatch()
	defer b.Close()

	var waits []*flight
	var mine []string
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return res, ErrClosed
	}
	seenNow := map[string]bool{}
	var keys [][]byte
	for i := range evs {
		e := evs[i]
		if e.ID == "" {
			l.mu.Unlock()
			l.release(mine, nil)
			return AppendResult{}, fmt.Errorf("%w: id: is required in the ledger", presence.ErrInvalidEvent)
		}
		if seenNow[e.ID] {
			res.Duplicates++
			continue
		}
		seenNow[e.ID] = true
		if f, ok := l.inflight[e.ID]; ok {
			waits = append(waits, f)
			res.Duplicates++
			continue
		}
		_, closer, err := l.db.Get(indexKey(e.ID))
		if err == nil {
			closer.Close()
			res.Duplicates++
			continue
		}
		if !errors.Is(err, pebble.ErrNotFound) {
			l.mu.Unlock()
			l.release(mine, err)
			return AppendResult{}, fmt.Errorf("ledger index lookup: %w", err)
		}
		seq, err := l.nextSeqLocked(e.SessionID)
		if err != nil {
			l.mu.Unlock()
			l.release(mine, err)
			return AppendResult{}, err
		}
		e.Seq = seq
		l.inflight[e.ID] = &flight{done: make(chan struct{})}
		mine = append(mine, e.ID)
		keys = append(keys, eventKey(e.SessionID, seq))
		res.Stored = append(res.Stored, e)
	}
	l.mu.Unlock()

	// The ids and seqs are reserved (in flight); encoding needs no lock.
	for i, e := range res.Stored {
		val, err := json.Marshal(e)
		if err != nil {
			l.release(mine, err)
			return AppendResult{}, fmt.Errorf("encode event %s: %w", e.ID, err)
		}
		_ = b.Set(keys[i], val, nil)
		_ = b.Set(indexKey(e.ID), keys[i][2:], nil)
	}

	var err error
	if len(mine) > 0 {
		err = l.db.Apply(b, l.wopt)
		if err != nil {
			err = fmt.Errorf("ledger commit: %w", err)
		}
	}
	l.release(mine, err)
	if err != nil {
		return AppendResult{}, err
	}
	for _, f := range waits {
		<-f.done
		if f.err != nil {
			return AppendResult{}, ErrInFlight
		}
	}
	return res, nil
}

// release ends the in-flight marks of ids with the commit's outcome.
func (l *Ledger) release(ids []string, err error) {
	if len(ids) == 0 {
		return
	}
	l.mu.Lock()
	for _, id := range ids {
		if f, ok := l.inflight[id]; ok {
			f.err = err
			close(f.done)
			delete(l.inflight, id)
		}
	}
	l.mu.Unlock()
}

func (l *Ledger) nextSeqLocked(session string) (uint64, error) {
	if n, ok := l.nextSeq[session]; ok {
		l.nextSeq[session] = n + 1
		return n, nil
	}
	lo, hi := sessionBounds(session)
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, fmt.Errorf("ledger seq scan: %w", err)
	}
	n := uint64(1)
	if it.Last() {
		k := it.Key()
		n = binary.BigEndian.Uint64(k[len(k)-8:]) + 1
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("ledger seq scan: %w", err)
	}
	l.nextSeq[session] = n + 1
	return n, nil
}

// Session returns a session's events in append order.
func (l *Ledger) Session(session string) ([]presence.Event, error) {
	lo, hi := sessionBounds(session)
	var out []presence.Event
	err := l.scan(lo, hi, func(_, v []byte) error {
		var e presence.Event
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("decode ledger event: %w", err)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// ForEachSession calls fn with each session's events in append order.
func (l *Ledger) ForEachSession(fn func(session string, evs []presence.Event) error) error {
	var cur string
	var evs []presence.Event
	err := l.scan([]byte{pfxEvent, 0}, []byte{pfxEvent, 1}, func(k, v []byte) error {
		sess := string(k[2 : len(k)-9])
		if sess != cur && len(evs) > 0 {
			if err := fn(cur, evs); err != nil {
				return err
			}
			evs = nil
		}
		cur = sess
		var e presence.Event
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("decode ledger event %q: %w", sess, err)
		}
		evs = append(evs, e)
		return nil
	})
	if err != nil {
		return err
	}
	if len(evs) > 0 {
		return fn(cur, evs)
	}
	return nil
}

// HasEvent reports whether an event with the given id is stored:
// used by tests that check nothing was stored twice.
func (l *Ledger) HasEvent(id string) (bool, error) {
	_, closer, err := l.db.Get(indexKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	closer.Close()
	return true, nil
}

func (l *Ledger) scan(lo, hi []byte, fn func(k, v []byte) error) error {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("ledger scan: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("ledger scan: %w", err)
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// PutMeta stores a small advisory value under key. It is not synced: a
// value lost in a crash costs one repeated prompt-context injection.
func (l *Ledger) PutMeta(key string, val []byte) error {
	return l.db.Set(append([]byte{pfxMeta, 0}, key...), val, pebble.NoSync)
}

// GetMeta reads a value stored with PutMeta; nil when absent.
func (l *Ledger) GetMeta(key string) ([]byte, error) {
	v, closer, err := l.db.Get(append([]byte{pfxMeta, 0}, key...))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}

// Diagnostic is a record of bad input the node received.
type Diagnostic struct {
	Seq         uint64 `json:"seq"`
	TS          string `json:"ts"`
	Source      string `json:"source"`
	Error       string `json:"error"`
	InputBytes  int    `json:"input_bytes,omitempty"`
	InputDigest string `json:"input_digest,omitempty"`
}

func (l *Ledger) loadDiagSeq() error {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxDiag, 0}, UpperBound: []byte{pfxDiag, 1}})
	if err != nil {
		return err
	}
	if it.Last() {
		k := it.Key()
		l.diagSeq = binary.BigEndian.Uint64(k[len(k)-8:])
	}
	return it.Close()
}

// AddDiagnostic records d durably and returns it with its seq.
func (l *Ledger) AddDiagnostic(d Diagnostic) (Diagnostic, error) {
	l.mu.Lock()
	l.diagSeq++
	d.Seq = l.diagSeq
	l.mu.Unlock()
	v, err := json.Marshal(d)
	if err != nil {
		return d, err
	}
	k := binary.BigEndian.AppendUint64([]byte{pfxDiag, 0}, d.Seq)
	return d, l.db.Set(k, v, l.wopt)
}

// Diagnostics returns up to limit diagnostics, newest first.
func (l *Ledger) Diagnostics(limit int) ([]Diagnostic, error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxDiag, 0}, UpperBound: []byte{pfxDiag, 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []Diagnostic
	for ok := it.Last(); ok && (limit <= 0 || len(out) < limit); ok = it.Prev() {
		var d Diagnostic
		if err := json.Unmarshal(it.Value(), &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// pebbleLogger adapts slog to Pebble's logger.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	panic(fmt.Sprintf(format, args...))
}

var _ io.Closer = (*Ledger)(nil)
