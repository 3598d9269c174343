package ledger

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Errors. Every write refused while the disk does not take writes returns
// an *UnwritableError, which matches ErrUnwritable and, on a full disk,
// ErrNoSpace, and wraps the disk's own error.
var (
	ErrClosed   = errors.New("ledger: closed")
	ErrInFlight = errors.New("ledger: an append of the same event id failed; retry")
	// ErrUnwritable: the ledger refuses writes (reads go on) until the
	// disk takes writes again; it recovers by itself.
	ErrUnwritable = errors.New("ledger: not writable")
	// ErrNoSpace: the disk is full (or over quota). It comes with
	// ErrUnwritable.
	ErrNoSpace = errors.New("ledger: disk full")
	// ErrUnavailable: the ledger could not reopen its store after a disk
	// fault; it keeps trying. Reads fail meanwhile.
	ErrUnavailable = errors.New("ledger: unavailable while its store reopens")
	// ErrOpenTimeout: Pebble did not open within Config.OpenTimeout.
	ErrOpenTimeout = errors.New("ledger: open timed out")
)

// UnwritableError says why and since when the ledger refuses writes.
type UnwritableError struct {
	// Cause is the disk's (or Pebble's) error.
	Cause error
	// Since is when the first write failed.
	Since time.Time
	// NoSpace is true on a full disk (ENOSPC, EDQUOT).
	NoSpace bool
}

func (e *UnwritableError) Error() string {
	what := "ledger: not writable"
	if e.NoSpace {
		what = "ledger: disk full"
	}
	return fmt.Sprintf("%s since %s, writes resume by themselves once the disk takes writes: %v",
		what, e.Since.UTC().Format(time.RFC3339), e.Cause)
}

// Unwrap gives ErrUnwritable, ErrNoSpace on a full disk, and the cause.
func (e *UnwritableError) Unwrap() []error {
	errs := []error{ErrUnwritable}
	if e.NoSpace {
		errs = append(errs, ErrNoSpace)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

// maxPendingDiags bounds the diagnostics kept in memory while unwritable.
const maxPendingDiags = 64

// Writable returns nil when the ledger takes writes, and the
// *UnwritableError every write returns otherwise.
func (l *Ledger) Writable() error {
	if e := l.state.Load(); e != nil {
		return e
	}
	return nil
}

// Retry asks a ledger that refuses writes to probe the disk now rather
// than at its next backoff tick (say, after the operator freed space). It
// does not wait.
func (l *Ledger) Retry() {
	select {
	case l.nudge <- struct{}{}:
	default:
	}
}

// markUnwritable turns writes off and starts the recovery goroutine. It
// takes no lock a Pebble goroutine could be waiting on: Pebble calls it
// from its background goroutines with its own mutex held.
func (l *Ledger) markUnwritable(cause error) {
	if !l.ready.Load() {
		return // Open is still opening: it reports its own failure
	}
	if ue := (*UnwritableError)(nil); errors.As(cause, &ue) && l.state.Load() != nil {
		return // a write that ended on a frozen store: the freeze said so
	}
	e := classify(cause, l.cfg.Clock.Now())
	if !l.state.CompareAndSwap(nil, e) {
		l.rearm.Store(true)
		return
	}
	l.life.Lock()
	defer l.life.Unlock()
	if l.closed {
		return
	}
	l.cfg.Logger.Error("ledger refuses writes and keeps serving reads", "err", e)
	l.wg.Add(1)
	go l.recoverLoop()
}

// recoverLoop owns the recovery: it waits for the writes in progress,
// reopens the store read-only (which stops Pebble's retries on the
// broken instance), probes the disk with backoff, and reopens it
// read-write once a probe passes. Close stops it.
func (l *Ledger) recoverLoop() {
	defer l.wg.Done()
	l.life.Lock()
	for l.writes > 0 && !l.closed {
		l.idle.Wait()
	}
	closed := l.closed
	l.life.Unlock()
	if closed {
		return
	}
	if err := l.reopen(true); err != nil {
		l.cfg.Logger.Error("ledger reopen read-only", "err", err)
	}
	delay := l.cfg.RetryMin
	timer := l.cfg.Clock.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.nudge:
		case <-timer.C():
		}
		delay = min(delay*2, l.cfg.RetryMax)
		timer.Reset(delay)
		if err := probe(l.fs, l.cfg.Dir, probeBytes, l.cfg.MinFreeBytes); err != nil {
			l.limit.log(l.cfg.Logger, slog.LevelWarn, "probe", "ledger disk still refuses writes", err)
			if l.dbNil() {
				_ = l.reopen(true)
			}
			continue
		}
		if err := l.resume(); err != nil {
			l.cfg.Logger.Error("ledger resume", "err", err)
			continue
		}
		l.cfg.Logger.Info("ledger writes resumed")
		if l.cfg.OnRecover != nil {
			l.cfg.OnRecover()
		}
		return
	}
}

func (l *Ledger) dbNil() bool {
	l.swap.RLock()
	defer l.swap.RUnlock()
	return l.db == nil
}

// reopen replaces the store with a fresh instance (read-only or not).
// Readers wait for it (at most Config.OpenTimeout for the open).
func (l *Ledger) reopen(readOnly bool) error {
	l.swap.Lock()
	defer l.swap.Unlock()
	return l.reopenLocked(readOnly)
}

func (l *Ledger) reopenLocked(readOnly bool) error {
	if l.db != nil {
		if err := guarded(l.db.Close); err != nil {
			l.cfg.Logger.Warn("ledger close of the faulted store", "err", err)
		}
		l.db, l.g = nil, nil
	}
	db, g, err := l.openDB(context.Background(), readOnly)
	if err != nil {
		return err
	}
	l.db, l.g, l.ro = db, g, readOnly
	return nil
}

// resume reopens the store read-write, makes what it replayed durable,
// writes the meta values and diagnostics kept while unwritable, and turns
// writes back on. On failure the store is left read-only.
func (l *Ledger) resume() error {
	l.swap.Lock()
	defer l.swap.Unlock()
	if err := l.reopenLocked(false); err != nil {
		_ = l.reopenLocked(true)
		return err
	}
	l.rearm.Store(false)
	// A batch whose sync failed may have reached the WAL: it is replayed
	// now, and the flush makes it durable before any duplicate of it is
	// acknowledged.
	err := l.write(l.db.Flush)
	if err == nil {
		err = l.writePending()
	}
	if err != nil {
		_ = l.reopenLocked(true)
		return err
	}
	l.mu.Lock()
	clear(l.nextSeq) // seqs reserved by failed appends: read them again
	l.mu.Unlock()
	prev := l.state.Swap(nil)
	if l.rearm.Swap(false) && prev != nil {
		l.markUnwritable(prev.Cause)
		return fmt.Errorf("%w: the disk failed again during recovery", ErrUnwritable)
	}
	return nil
}

// writePending writes, in one synced batch, the meta values and the
// diagnostics that were refused, and one diagnostic that counts the
// appends refused. Called with swap held for writing.
func (l *Ledger) writePending() error {
	l.mu.Lock()
	meta := l.pendingMeta
	diags := l.pendingDiags
	dropped := l.droppedDiags
	ref := l.refused
	cause := l.state.Load()
	if ref.appends > 0 && cause != nil {
		l.diagSeq++
		diags = append(diags, Diagnostic{Seq: l.diagSeq, TS: l.cfg.Clock.Now().UTC().Format(time.RFC3339Nano),
			Source: "ledger", Error: fmt.Sprintf("failed or refused %d appends (%d events) from %s to %s, and %d diagnostics, while the disk refused writes: %v",
				ref.appends, ref.events, ref.first.UTC().Format(time.RFC3339), ref.last.UTC().Format(time.RFC3339),
				dropped, cause.Cause)})
	}
	l.mu.Unlock()
	if len(meta) == 0 && len(diags) == 0 {
		return nil
	}
	b := l.db.NewBatch()
	defer b.Close()
	for k, v := range meta {
		_ = b.Set(metaKey(k), v, nil)
	}
	for _, d := range diags {
		v, err := json.Marshal(d)
		if err != nil {
			return err
		}
		_ = b.Set(binary.BigEndian.AppendUint64([]byte{pfxDiag, 0}, d.Seq), v, nil)
	}
	if err := l.write(func() error { return l.db.Apply(b, pebble.Sync) }); err != nil {
		return err
	}
	l.mu.Lock()
	for k, v := range meta {
		if string(l.pendingMeta[k]) == string(v) {
			delete(l.pendingMeta, k)
		}
	}
	l.pendingDiags = l.pendingDiags[min(len(l.pendingDiags), len(diags)):]
	l.droppedDiags = 0
	l.refused = refusals{}
	l.mu.Unlock()
	return nil
}

// refusals counts the appends that failed or were refused while
// unwritable.
type refusals struct {
	appends, events int
	first, last     time.Time
}

func (l *Ledger) noteRefused(events int) {
	now := l.cfg.Clock.Now()
	l.mu.Lock()
	if l.refused.appends == 0 {
		l.refused.first = now
	}
	l.refused.appends++
	l.refused.events += events
	l.refused.last = now
	l.mu.Unlock()
}

// write runs fn, a write into the store that beginWrite (or the swap
// lock) holds. When the store froze meanwhile (a disk error, gateFS), it
// returns the ledger's *UnwritableError even if Pebble reported the write
// done: on a frozen store that write never reached the disk.
func (l *Ledger) write(fn func() error) error {
	err := guarded(fn)
	if frozen, cause := l.g.Frozen(); frozen {
		if e := l.state.Load(); e != nil {
			return e
		}
		return classify(cause, l.cfg.Clock.Now())
	}
	return err
}

// beginWrite admits a write: it fails fast while the ledger is closed or
// unwritable, and otherwise counts the write (recovery waits for it) and
// holds the store until endWrite.
func (l *Ledger) beginWrite() (*pebble.DB, error) {
	l.life.Lock()
	if l.closed {
		l.life.Unlock()
		return nil, ErrClosed
	}
	if e := l.state.Load(); e != nil {
		l.life.Unlock()
		return nil, e
	}
	l.writes++
	l.life.Unlock()
	l.swap.RLock()
	if l.db == nil || l.ro {
		l.endWrite()
		if e := l.state.Load(); e != nil {
			return nil, e
		}
		return nil, ErrUnavailable
	}
	return l.db, nil
}

func (l *Ledger) endWrite() {
	l.swap.RUnlock()
	l.life.Lock()
	l.writes--
	if l.writes == 0 {
		l.idle.Broadcast()
	}
	l.life.Unlock()
}

// beginRead holds the store for a read until endRead.
func (l *Ledger) beginRead() (*pebble.DB, error) {
	l.swap.RLock()
	if l.db == nil {
		l.swap.RUnlock()
		if l.isClosed() {
			return nil, ErrClosed
		}
		return nil, ErrUnavailable
	}
	return l.db, nil
}

func (l *Ledger) endRead() { l.swap.RUnlock() }

func (l *Ledger) isClosed() bool {
	l.life.Lock()
	defer l.life.Unlock()
	return l.closed
}
