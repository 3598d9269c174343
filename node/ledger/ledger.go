// Package ledger is the node's durable canonical event record, kept in
// Pebble. One session's events are one contiguous key range, in append
// order; an event id index makes ingestion idempotent. An append is
// acknowledged only after its batch is in a synced WAL; concurrent appends
// share syncs through Pebble's commit pipeline.
package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// Key prefixes. Session ids never contain NUL (presence validation).
const (
	pfxEvent = 'e' // e\x00<session>\x00<seq:8 BE> -> event JSON
	pfxIndex = 'i' // i\x00<event id> -> <session>\x00<seq:8 BE>
	pfxDiag  = 'd' // d\x00<seq:8 BE> -> diagnostic JSON
	pfxMeta  = 'm' // m\x00<key> -> value
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
	// FS replaces the file system (tests inject faults with errorfs).
	// Nil: the OS's, or memory when InMemory.
	FS vfs.FS
	// OpenTimeout bounds Open, and each reopen while recovering from a
	// disk fault (default 10 s).
	OpenTimeout time.Duration
	// RetryMin and RetryMax bound the backoff of the disk probe while the
	// ledger refuses writes (defaults 1 s and 30 s). Retry probes now.
	RetryMin, RetryMax time.Duration
	// MinFreeBytes is the free space Open and the recovery probe want
	// (default 8 MiB; negative: no check).
	MinFreeBytes int64
	// OnRecover, when set, is called after writes resume, from the
	// ledger's recovery goroutine, after the meta values and diagnostics
	// refused meanwhile are written. It must not block for long.
	OnRecover func()
	// Clock reads the time and arms the ledger's timers (default the
	// real clock).
	Clock clock.Clock
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
	if c.OpenTimeout < 0 || c.RetryMin < 0 || c.RetryMax < 0 {
		return errors.New("ledger: OpenTimeout, RetryMin and RetryMax must not be negative")
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.OpenTimeout == 0 {
		c.OpenTimeout = 10 * time.Second
	}
	if c.RetryMin == 0 {
		c.RetryMin = time.Second
	}
	if c.RetryMax == 0 {
		c.RetryMax = 30 * time.Second
	}
	c.RetryMax = max(c.RetryMax, c.RetryMin)
	if c.MinFreeBytes == 0 {
		c.MinFreeBytes = 8 << 20
	}
	if c.InMemory && c.Dir == "" {
		c.Dir = "ledger"
	}
}

// probeBytes is the size of the probe write.
const probeBytes = 64 << 10

// logWindow is the rate limit of repeated Pebble log lines.
const logWindow = 10 * time.Second

// closeWait bounds how long Close waits for writes stuck in Pebble.
const closeWait = 5 * time.Second

// Ledger is the event store. It is safe for concurrent use.
//
// A failed commit never panics: the ledger turns unwritable (every write
// returns an *UnwritableError), keeps serving reads from the store
// reopened read-only, probes the disk with backoff, and reopens it
// read-write once a probe passes. See Writable, Retry, Config.OnRecover.
type Ledger struct {
	cfg   Config
	fs    vfs.FS
	wopt  *pebble.WriteOptions
	limit limiter

	// swap is held for reading around every use of db, and for writing
	// to replace it (recovery, Close).
	swap sync.RWMutex
	db   *pebble.DB // nil when closed or when a reopen failed
	g    *gateFS    // db's file system: frozen after a disk error
	ro   bool

	state atomic.Pointer[UnwritableError] // nil: writable
	rearm atomic.Bool                     // a fault arrived while recovering
	ready atomic.Bool                     // Open succeeded
	nudge chan struct{}
	stop  chan struct{}
	wg    sync.WaitGroup // the recovery goroutine

	life   sync.Mutex // guards closed and writes
	idle   *sync.Cond // on life: writes fell to 0
	closed bool
	writes int

	mu           sync.Mutex
	nextSeq      map[string]uint64
	inflight     map[string]*flight
	diagSeq      uint64
	pendingMeta  map[string][]byte
	pendingDiags []Diagnostic
	droppedDiags int
	refused      refusals
}

type flight struct {
	done chan struct{}
	err  error
}

// Open opens (creating if needed) the ledger; see OpenContext.
func Open(cfg Config) (*Ledger, error) {
	return OpenContext(context.Background(), cfg)
}

// OpenContext opens (creating if needed) the ledger. It first probes that
// Dir takes a synced write (a full disk fails at once with ErrNoSpace, a
// read-only or unwritable dir with ErrUnwritable), then opens Pebble, and
// returns an error wrapping ErrOpenTimeout after Config.OpenTimeout, or
// ctx's error when ctx ends first (a signal). On any failure nothing it
// opened stays open.
func OpenContext(ctx context.Context, cfg Config) (*Ledger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	l := &Ledger{cfg: cfg, fs: cfg.FS, wopt: pebble.Sync, limit: limiter{window: logWindow, clock: cfg.Clock},
		nudge: make(chan struct{}, 1), stop: make(chan struct{}),
		nextSeq: map[string]uint64{}, inflight: map[string]*flight{}, pendingMeta: map[string][]byte{}}
	l.idle = sync.NewCond(&l.life)
	if l.fs == nil {
		l.fs = vfs.Default
		if cfg.InMemory {
			l.fs = vfs.NewMem()
		}
	}
	if cfg.NoSync {
		l.wopt = pebble.NoSync
	}
	if err := probe(l.fs, cfg.Dir, probeBytes, cfg.MinFreeBytes); err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", cfg.Dir, classify(err, cfg.Clock.Now()))
	}
	db, g, err := l.openDB(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", cfg.Dir, err)
	}
	l.db, l.g = db, g
	if err := l.loadDiagSeq(); err != nil {
		_ = guarded(db.Close)
		return nil, err
	}
	l.ready.Store(true)
	return l, nil
}

// Close stops the recovery, waits (at most 5 s) for writes in progress
// and closes the store. It is safe to call twice.
func (l *Ledger) Close() error {
	l.life.Lock()
	if l.closed {
		l.life.Unlock()
		return nil
	}
	l.closed = true
	close(l.stop)
	l.idle.Broadcast()
	// Wait on idle (a write's end broadcasts it) until no write is in
	// progress, or until closeWait has passed (the timer broadcasts too).
	expired := false
	timer := l.cfg.Clock.AfterFunc(closeWait, func() {
		l.life.Lock()
		expired = true
		l.idle.Broadcast()
		l.life.Unlock()
	})
	for l.writes > 0 && !expired {
		l.idle.Wait()
	}
	stuck := l.writes
	l.life.Unlock()
	timer.Stop()
	l.wg.Wait()
	if stuck > 0 {
		// A write parked inside Pebble (a write stall on a full disk)
		// holds the store; closing Pebble under it is not allowed.
		return fmt.Errorf("%w: %d writes still blocked in the store after %s; it stays open until exit",
			ErrClosed, stuck, closeWait)
	}
	l.swap.Lock()
	defer l.swap.Unlock()
	if l.db == nil {
		return nil
	}
	err := guarded(l.db.Close)
	if frozen, _ := l.g.Frozen(); frozen {
		err = nil // what it could not write was refused already
	}
	l.db, l.g = nil, nil
	return err
}

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
	db, err := l.beginWrite()
	if err != nil {
		if errors.Is(err, ErrUnwritable) {
			l.noteRefused(len(evs))
		}
		return res, err
	}
	defer l.endWrite()
	b := db.NewBatch()
	defer b.Close()

	var waits []*flight
	var mine []string
	l.mu.Lock()
	// A failed commit marks the ledger unwritable before it releases its
	// ids (under mu): an event whose commit failed but which Pebble shows
	// anyway is never answered as a duplicate.
	if e := l.state.Load(); e != nil {
		l.mu.Unlock()
		l.noteRefused(len(evs))
		return res, e
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
		var closer io.Closer
		err := guarded(func() (err error) {
			_, closer, err = db.Get(indexKey(e.ID))
			return err
		})
		if err == nil {
			closer.Close()
			res.Duplicates++
			continue
		}
		if !errors.Is(err, pebble.ErrNotFound) {
			l.mu.Unlock()
			l.release(mine, err)
			return AppendResult{}, fmt.Errorf("ledger: index lookup: %w", err)
		}
		seq, err := l.nextSeqLocked(db, e.SessionID)
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
			return AppendResult{}, fmt.Errorf("ledger: encode event %s: %w", e.ID, err)
		}
		_ = b.Set(keys[i], val, nil)
		_ = b.Set(indexKey(e.ID), keys[i][2:], nil)
	}

	if len(mine) > 0 {
		if cerr := l.write(func() error { return db.Apply(b, l.wopt) }); cerr != nil {
			l.markUnwritable(cerr)
			l.noteRefused(len(evs))
			if e := l.state.Load(); e != nil {
				err = e
			} else { // recovered already: still this commit failed
				err = classify(cerr, l.cfg.Clock.Now())
			}
		}
	}
	l.release(mine, err)
	if err != nil {
		return AppendResult{}, err
	}
	for _, f := range waits {
		<-f.done
		if f.err != nil {
			return AppendResult{}, fmt.Errorf("%w: %w", ErrInFlight, f.err)
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

func (l *Ledger) nextSeqLocked(db *pebble.DB, session string) (uint64, error) {
	if n, ok := l.nextSeq[session]; ok {
		l.nextSeq[session] = n + 1
		return n, nil
	}
	lo, hi := sessionBounds(session)
	n := uint64(1)
	err := guarded(func() error {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return err
		}
		if it.Last() {
			k := it.Key()
			n = binary.BigEndian.Uint64(k[len(k)-8:]) + 1
		}
		return it.Close()
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: seq scan: %w", err)
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
	db, err := l.beginRead()
	if err != nil {
		return false, err
	}
	defer l.endRead()
	var closer io.Closer
	err = guarded(func() (err error) {
		_, closer, err = db.Get(indexKey(id))
		return err
	})
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	closer.Close()
	return true, nil
}

// scan calls fn with each key and value in [lo, hi), in order.
func (l *Ledger) scan(lo, hi []byte, fn func(k, v []byte) error) error {
	return l.iterate(lo, hi, func(it *pebble.Iterator) error {
		for it.First(); it.Valid(); it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("ledger: scan: %w", err)
			}
			if err := fn(it.Key(), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// iterate runs fn on an iterator over [lo, hi) of the current store.
func (l *Ledger) iterate(lo, hi []byte, fn func(it *pebble.Iterator) error) error {
	db, err := l.beginRead()
	if err != nil {
		return err
	}
	defer l.endRead()
	return guarded(func() error {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return fmt.Errorf("ledger: scan: %w", err)
		}
		ferr := fn(it)
		if cerr := it.Close(); ferr == nil && cerr != nil {
			ferr = fmt.Errorf("ledger: scan: %w", cerr)
		}
		return ferr
	})
}

func metaKey(key string) []byte { return append([]byte{pfxMeta, 0}, key...) }

// PutMeta stores a small advisory value under key. It is not synced: a
// value lost in a crash costs one repeated prompt-context injection.
// While the ledger is unwritable the value is kept in memory (GetMeta
// returns it), written once writes resume, and the *UnwritableError is
// returned.
func (l *Ledger) PutMeta(key string, val []byte) error {
	db, err := l.beginWrite()
	if err == nil {
		err = l.write(func() error { return db.Set(metaKey(key), val, pebble.NoSync) })
		l.endWrite()
		if err == nil {
			return nil
		}
		l.markUnwritable(err)
		if e := l.state.Load(); e != nil {
			err = e
		}
	}
	if !errors.Is(err, ErrUnwritable) {
		return err
	}
	l.mu.Lock()
	l.pendingMeta[key] = bytes.Clone(val)
	l.mu.Unlock()
	return err
}

// GetMeta reads a value stored with PutMeta; nil when absent.
func (l *Ledger) GetMeta(key string) ([]byte, error) {
	l.mu.Lock()
	v, ok := l.pendingMeta[key]
	l.mu.Unlock()
	if ok {
		return bytes.Clone(v), nil
	}
	db, err := l.beginRead()
	if err != nil {
		return nil, err
	}
	defer l.endRead()
	var out []byte
	err = guarded(func() error {
		v, closer, err := db.Get(metaKey(key))
		if err != nil {
			return err
		}
		out = bytes.Clone(v)
		return closer.Close()
	})
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	return out, err
}

// Diagnostic is wire.Diagnostic.
type Diagnostic = wire.Diagnostic

func (l *Ledger) loadDiagSeq() error {
	return l.iterate([]byte{pfxDiag, 0}, []byte{pfxDiag, 1}, func(it *pebble.Iterator) error {
		if it.Last() {
			k := it.Key()
			l.diagSeq = binary.BigEndian.Uint64(k[len(k)-8:])
		}
		return nil
	})
}

// AddDiagnostic records d durably and returns it with its seq. While the
// ledger is unwritable, up to 64 diagnostics are kept in memory and
// written once writes resume (later ones are counted in the diagnostic
// that recovery writes), and the *UnwritableError is returned.
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
	db, err := l.beginWrite()
	if err == nil {
		err = l.write(func() error { return db.Set(k, v, l.wopt) })
		l.endWrite()
		if err == nil {
			return d, nil
		}
		l.markUnwritable(err)
		if e := l.state.Load(); e != nil {
			err = e
		}
	}
	if errors.Is(err, ErrUnwritable) {
		l.mu.Lock()
		if len(l.pendingDiags) < maxPendingDiags {
			l.pendingDiags = append(l.pendingDiags, d)
		} else {
			l.droppedDiags++
		}
		l.mu.Unlock()
	}
	return d, err
}

// Diagnostics returns up to limit diagnostics, newest first (those kept
// in memory while unwritable first).
func (l *Ledger) Diagnostics(limit int) ([]Diagnostic, error) {
	l.mu.Lock()
	var out []Diagnostic
	for i := len(l.pendingDiags) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		out = append(out, l.pendingDiags[i])
	}
	l.mu.Unlock()
	err := l.iterate([]byte{pfxDiag, 0}, []byte{pfxDiag, 1}, func(it *pebble.Iterator) error {
		for ok := it.Last(); ok && (limit <= 0 || len(out) < limit); ok = it.Prev() {
			var d Diagnostic
			if err := json.Unmarshal(it.Value(), &d); err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

var _ io.Closer = (*Ledger)(nil)

// ClearDiagnostics deletes every diagnostic (`harn node errors --clear`)
// and returns how many there were. Sequence numbers keep counting, so a
// later diagnostic never reuses a cleared one's number.
func (l *Ledger) ClearDiagnostics() (int, error) {
	ds, err := l.Diagnostics(0)
	if err != nil {
		return 0, err
	}
	db, err := l.beginWrite()
	if err != nil {
		return 0, err
	}
	err = l.write(func() error { return db.DeleteRange([]byte{pfxDiag, 0}, []byte{pfxDiag, 1}, l.wopt) })
	l.endWrite()
	if err != nil {
		l.markUnwritable(err)
		return 0, err
	}
	l.mu.Lock()
	l.pendingDiags = nil
	l.mu.Unlock()
	return len(ds), nil
}
