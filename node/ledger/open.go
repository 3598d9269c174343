package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/harn-dev/harn/util/clock"
)

// probeName is the file the writability probe writes and removes in Dir.
const probeName = "harn-probe.tmp"

// classify wraps a disk error in the ledger's sentinels: ErrNoSpace (and
// ErrUnwritable) for a full disk or quota, ErrUnwritable for the rest.
func classify(cause error, since time.Time) *UnwritableError {
	return &UnwritableError{Cause: cause, Since: since, NoSpace: isNoSpace(cause)}
}

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// isDiskError reports whether a background error means the disk refuses
// writes (as opposed to a bug or corruption, which reopening won't fix
// either but which should not be hidden as "disk full").
func isDiskError(err error) bool {
	return isNoSpace(err) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EIO) ||
		errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// probe checks that dir takes a small synced write and, when the FS can
// tell, that at least minFree bytes are free.
func probe(fs vfs.FS, dir string, size, minFree int64) error {
	if err := fs.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if minFree > 0 {
		u, err := fs.GetDiskUsage(dir)
		if err == nil && int64(u.AvailBytes) < minFree {
			return fmt.Errorf("%s has %d bytes free, below the %d the ledger needs: %w",
				dir, u.AvailBytes, minFree, syscall.ENOSPC)
		}
	}
	p := fs.PathJoin(dir, probeName)
	f, err := fs.Create(p, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	buf := make([]byte, min(size, 64<<10))
	for left := size; left > 0 && err == nil; left -= int64(len(buf)) {
		_, err = f.Write(buf[:min(int64(len(buf)), left)])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := fs.Remove(p); err == nil && rerr != nil && !os.IsNotExist(rerr) {
		err = rerr
	}
	return err
}

// openDB opens Pebble on l's FS, read-only or not, within cfg.OpenTimeout
// and ctx. pebble.Open cannot be cancelled: when it does not return in
// time (a flush at start that fails forever on a full disk retries without
// pause), the attempt is abandoned: its FS gate parks every later write of
// that instance for good, so it neither spins nor writes nor logs, and its
// directory lock is released so that a later attempt can open. The parked
// goroutine is the one leak, one per abandoned attempt; see docs/design.md.
//
// Once open, the instance is armed: a disk error freezes it (gateFS)
// rather than reaching Pebble.
func (l *Ledger) openDB(ctx context.Context, readOnly bool) (*pebble.DB, *gateFS, error) {
	g := newGateFS(l.fs, l.markUnwritable)
	opts := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		FS:                 g,
		ReadOnly:           readOnly,
		Logger:             &pebbleLogger{l: l, gate: g},
		EventListener: &pebble.EventListener{
			BackgroundError: func(err error) {
				if g.abandoned.Load() {
					return
				}
				l.limit.log(l.cfg.Logger, slog.LevelError, "background error", "pebble background error", err)
				if isDiskError(err) {
					l.markUnwritable(err)
				}
			},
		},
	}
	// An idle ledger wakes nothing: Pebble's own compaction scheduler
	// ticks every 100 ms (scheduler.go).
	opts.Experimental.CompactionScheduler = newCompactionScheduler(l.cfg.Clock)
	// Every Append looks its event ids up in the index, and almost always
	// finds nothing: bloom filters answer those misses without reading
	// data blocks, so an Append's cost does not grow with the ledger.
	// Tables written without filters (older ledgers) are still read.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	type result struct {
		db  *pebble.DB
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = guarded(func() error {
			var err error
			r.db, err = pebble.Open(l.cfg.Dir, opts)
			return err
		})
		done <- r
	}()
	timer := l.cfg.Clock.NewTimer(l.cfg.OpenTimeout)
	defer timer.Stop()
	var why error
	select {
	case r := <-done:
		if r.err != nil {
			return nil, nil, r.err
		}
		g.armed.Store(true)
		return r.db, g, nil
	case <-timer.C():
		why = fmt.Errorf("%w after %s", ErrOpenTimeout, l.cfg.OpenTimeout)
	case <-ctx.Done():
		why = ctx.Err()
	case <-l.stop:
		why = ErrClosed
	}
	g.abandon()
	select {
	case r := <-done: // it finished just now: close it (the gate lets Close through)
		if r.db != nil {
			g.unpark()
			_ = guarded(r.db.Close)
		}
	default:
	}
	return nil, nil, why
}

// fatalError is what pebbleLogger.Fatalf panics with inside guarded.
type fatalError struct{ err error }

// guardedFn names guarded for pebbleLogger.Fatalf's stack check.
var guardedFn string

func init() {
	guardedFn = runtime.FuncForPC(reflect.ValueOf(guarded).Pointer()).Name()
}

// guarded runs fn, a call into Pebble from a ledger goroutine, and turns
// a Fatalf of Pebble's inside it (a failed commit: the WAL could not be
// written or synced) into an error instead of a crash.
func guarded(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatalError)
			if !ok {
				panic(r)
			}
			err = f.err
		}
	}()
	return fn()
}

// inGuarded reports whether the calling goroutine runs inside guarded.
func inGuarded() bool {
	pcs := make([]uintptr, 128)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		fr, more := frames.Next()
		if fr.Function == guardedFn {
			return true
		}
		if !more {
			return false
		}
	}
}

// pebbleLogger adapts slog to Pebble's logger. Repeated lines are rate
// limited (a flush that fails retries without pause), and an abandoned
// instance says nothing more. Fatalf never kills the process: inside
// guarded it panics with a fatalError that guarded returns as an error;
// elsewhere (a background goroutine of Pebble's) it marks the ledger
// unwritable, so that the DB is reopened, and returns.
type pebbleLogger struct {
	l    *Ledger
	gate *gateFS
}

func (p *pebbleLogger) Infof(format string, args ...any) {
	if p.gate.abandoned.Load() {
		return
	}
	p.l.cfg.Logger.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p *pebbleLogger) Errorf(format string, args ...any) {
	if p.gate.abandoned.Load() {
		return
	}
	p.l.limit.log(p.l.cfg.Logger, slog.LevelError, format, fmt.Sprintf(format, args...), nil)
}

func (p *pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	cause := errors.New("pebble: " + msg)
	for _, a := range args {
		if e, ok := a.(error); ok {
			cause = fmt.Errorf("pebble: fatal: %w", e)
			break
		}
	}
	if !p.gate.abandoned.Load() {
		p.l.limit.log(p.l.cfg.Logger, slog.LevelError, format, msg, nil)
	}
	if inGuarded() {
		panic(fatalError{err: cause})
	}
	if !p.gate.abandoned.Load() {
		p.l.markUnwritable(cause)
	}
}

// limiter rate-limits log lines by their format: one line per window,
// then one line saying how many were left out.
type limiter struct {
	clock  clock.Clock
	window time.Duration
	mu     sync.Mutex
	seen   map[string]*limitState
}

type limitState struct {
	last       time.Time
	suppressed int
}

func (r *limiter) log(lg *slog.Logger, lvl slog.Level, key, msg string, err error) {
	now := r.clock.Now()
	r.mu.Lock()
	if r.seen == nil {
		r.seen = map[string]*limitState{}
	}
	st := r.seen[key]
	if st == nil {
		if len(r.seen) > 256 { // bounded: forget old formats
			clear(r.seen)
		}
		st = &limitState{}
		r.seen[key] = st
	}
	if !st.last.IsZero() && now.Sub(st.last) < r.window {
		st.suppressed++
		r.mu.Unlock()
		return
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	r.mu.Unlock()
	attrs := []any{"component", "pebble"}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	if n > 0 {
		attrs = append(attrs, "suppressed", n)
	}
	lg.Log(context.Background(), lvl, msg, attrs...)
}
