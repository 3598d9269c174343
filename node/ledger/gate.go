package ledger

import (
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// gateFS is the file system one Pebble instance sees. It does two things.
//
// Abandon (an open that did not finish in time): every later write parks
// forever (reads go on failing fast with ErrClosed) and the directory
// lock is released.
//
// Freeze (a disk error once the instance is open): Pebble must never see
// a write fail. A failed WAL write is sticky in Pebble's log writer, and
// the next memtable rotation then panics in rotateWAL with DB.mu
// released under a deferred unlock: "fatal error: sync: unlock of
// unlocked mutex", which no recover stops. So the first write-side call
// that fails with a disk error freezes the instance instead: that call and
// every later one report success to Pebble and touch the disk no more.
// Files the frozen instance makes live in memory (it may read them back),
// its removes and renames of files on disk do nothing, and its writes to
// files opened before are dropped. The ledger is told at once
// (onFault), answers every write that ends on a frozen instance with the
// disk's error (settle), closes the instance (which completes, since
// nothing fails) and reopens the directory. What the frozen instance
// wrote before the error is what a crash at that moment leaves; what it
// "wrote" after it was never acknowledged.
type gateFS struct {
	vfs.FS
	abandoned atomic.Bool
	parked    chan struct{} // closed by unpark: writes fail instead of parking
	unparkOne sync.Once

	mu   sync.Mutex
	lock *onceCloser

	// armed: Open returned; a disk error freezes rather than fails
	armed   atomic.Bool
	frozen  atomic.Bool
	freeze1 sync.Once
	cause   error       // the error that froze it (set before frozen)
	onFault func(error) // told once, from the goroutine that hit the error

	gmu    sync.Mutex
	ghost  vfs.FS          // memory: what the frozen instance makes
	ghosts map[string]bool // paths that live in ghost
}

func newGateFS(fs vfs.FS, onFault func(error)) *gateFS {
	return &gateFS{FS: fs, parked: make(chan struct{}), onFault: onFault}
}

func (g *gateFS) abandon() {
	g.abandoned.Store(true)
	g.mu.Lock()
	lk := g.lock
	g.mu.Unlock()
	if lk != nil {
		_ = lk.Close()
	}
}

func (g *gateFS) unpark() { g.unparkOne.Do(func() { close(g.parked) }) }

// gate parks a write of an abandoned instance.
func (g *gateFS) gate() error {
	if !g.abandoned.Load() {
		return nil
	}
	<-g.parked
	return ErrClosed
}

// failed reports whether err, the result of a write-side call, freezes
// the instance (and freezes it): true means "report success to Pebble".
func (g *gateFS) failed(err error) bool {
	if err == nil || !g.armed.Load() || !isDiskError(err) {
		return g.frozen.Load() && err != nil
	}
	g.freeze1.Do(func() {
		g.gmu.Lock()
		g.ghost, g.ghosts = vfs.NewMem(), map[string]bool{}
		g.gmu.Unlock()
		g.cause = err
		g.frozen.Store(true)
		if g.onFault != nil {
			g.onFault(err)
		}
	})
	return true
}

// isGhost reports whether name is a file the frozen instance made.
func (g *gateFS) isGhost(name string) bool {
	if !g.frozen.Load() {
		return false
	}
	g.gmu.Lock()
	defer g.gmu.Unlock()
	return g.ghosts[name]
}

// makeGhost creates name in memory for the frozen instance.
func (g *gateFS) makeGhost(name string) (vfs.File, error) {
	g.gmu.Lock()
	defer g.gmu.Unlock()
	if err := g.ghost.MkdirAll(g.ghost.PathDir(name), 0o700); err != nil {
		return nil, err
	}
	f, err := g.ghost.Create(name, vfs.WriteCategoryUnspecified)
	if err == nil {
		g.ghosts[name] = true
	}
	return f, err
}

// Frozen reports whether the instance froze, and why.
func (g *gateFS) Frozen() (bool, error) {
	if g == nil || !g.frozen.Load() {
		return false, nil
	}
	return true, g.cause
}

func (g *gateFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := g.gate(); err != nil {
		return nil, err
	}
	if g.frozen.Load() {
		return g.makeGhost(name)
	}
	f, err := g.FS.Create(name, c)
	if g.failed(err) {
		return g.makeGhost(name)
	}
	return g.wrap(f), err
}

func (g *gateFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, o ...vfs.OpenOption) (vfs.File, error) {
	if err := g.gate(); err != nil {
		return nil, err
	}
	if g.frozen.Load() {
		if g.isGhost(name) {
			return g.ghost.OpenReadWrite(name, c, o...)
		}
		return g.makeGhost(name)
	}
	f, err := g.FS.OpenReadWrite(name, c, o...)
	if g.failed(err) {
		return g.makeGhost(name)
	}
	return g.wrap(f), err
}

func (g *gateFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := g.gate(); err != nil {
		return nil, err
	}
	if g.frozen.Load() {
		return g.makeGhost(name)
	}
	f, err := g.FS.ReuseForWrite(old, name, c)
	if g.failed(err) {
		return g.makeGhost(name)
	}
	return g.wrap(f), err
}

func (g *gateFS) Open(name string, o ...vfs.OpenOption) (vfs.File, error) {
	if g.isGhost(name) {
		return g.ghost.Open(name, o...)
	}
	return g.FS.Open(name, o...)
}

func (g *gateFS) OpenDir(name string) (vfs.File, error) {
	if g.frozen.Load() {
		return nopDir{}, nil
	}
	f, err := g.FS.OpenDir(name)
	return g.wrap(f), err
}

func (g *gateFS) Stat(name string) (vfs.FileInfo, error) {
	if g.isGhost(name) {
		return g.ghost.Stat(name)
	}
	return g.FS.Stat(name)
}

func (g *gateFS) Link(a, b string) error {
	if err := g.gate(); err != nil {
		return err
	}
	if g.frozen.Load() {
		return nil
	}
	if err := g.FS.Link(a, b); !g.failed(err) {
		return err
	}
	return nil
}

func (g *gateFS) Remove(name string) error {
	if err := g.gate(); err != nil {
		return err
	}
	if g.frozen.Load() {
		if g.isGhost(name) {
			g.gmu.Lock()
			delete(g.ghosts, name)
			g.gmu.Unlock()
			return g.ghost.Remove(name)
		}
		return nil // the disk's files are the next instance's now
	}
	return g.FS.Remove(name)
}

func (g *gateFS) RemoveAll(name string) error {
	if err := g.gate(); err != nil {
		return err
	}
	if g.frozen.Load() {
		return nil
	}
	return g.FS.RemoveAll(name)
}

func (g *gateFS) Rename(a, b string) error {
	if err := g.gate(); err != nil {
		return err
	}
	if g.frozen.Load() {
		g.gmu.Lock()
		defer g.gmu.Unlock()
		if !g.ghosts[a] {
			return nil
		}
		delete(g.ghosts, a)
		g.ghosts[b] = true
		return g.ghost.Rename(a, b)
	}
	if err := g.FS.Rename(a, b); !g.failed(err) {
		return err
	}
	return nil
}

func (g *gateFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := g.gate(); err != nil {
		return err
	}
	if g.frozen.Load() {
		return nil
	}
	if err := g.FS.MkdirAll(dir, perm); !g.failed(err) {
		return err
	}
	return nil
}

// Lock hands Pebble a lock that closes once: whichever of abandon and
// Pebble closes it first releases it.
func (g *gateFS) Lock(name string) (io.Closer, error) {
	if err := g.gate(); err != nil {
		return nil, err
	}
	c, err := g.FS.Lock(name)
	if err != nil {
		return nil, err
	}
	oc := &onceCloser{c: c}
	g.mu.Lock()
	g.lock = oc
	g.mu.Unlock()
	return oc, nil
}

func (g *gateFS) wrap(f vfs.File) vfs.File {
	if f == nil {
		return nil
	}
	return &gateFile{File: f, g: g}
}

// gateFile is a file on disk of a gated instance: once the instance is
// frozen, its writes and syncs are dropped and reported done.
type gateFile struct {
	vfs.File
	g *gateFS
}

func (f *gateFile) Write(p []byte) (int, error) {
	if err := f.g.gate(); err != nil {
		return 0, err
	}
	if f.g.frozen.Load() {
		return len(p), nil
	}
	n, err := f.File.Write(p)
	if f.g.failed(err) {
		return len(p), nil
	}
	return n, err
}

func (f *gateFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.g.gate(); err != nil {
		return 0, err
	}
	if f.g.frozen.Load() {
		return len(p), nil
	}
	n, err := f.File.WriteAt(p, off)
	if f.g.failed(err) {
		return len(p), nil
	}
	return n, err
}

func (f *gateFile) Sync() error {
	if err := f.g.gate(); err != nil {
		return err
	}
	if f.g.frozen.Load() {
		return nil
	}
	if err := f.File.Sync(); !f.g.failed(err) {
		return err
	}
	return nil
}

func (f *gateFile) SyncData() error {
	if err := f.g.gate(); err != nil {
		return err
	}
	if f.g.frozen.Load() {
		return nil
	}
	if err := f.File.SyncData(); !f.g.failed(err) {
		return err
	}
	return nil
}

func (f *gateFile) SyncTo(length int64) (bool, error) {
	if err := f.g.gate(); err != nil {
		return false, err
	}
	if f.g.frozen.Load() {
		return true, nil
	}
	full, err := f.File.SyncTo(length)
	if f.g.failed(err) {
		return true, nil
	}
	return full, err
}

func (f *gateFile) Preallocate(off, n int64) error {
	if err := f.g.gate(); err != nil {
		return err
	}
	if f.g.frozen.Load() {
		return nil
	}
	if err := f.File.Preallocate(off, n); !f.g.failed(err) {
		return err
	}
	return nil
}

func (f *gateFile) Close() error {
	err := f.File.Close()
	if f.g.frozen.Load() {
		return nil
	}
	return err
}

// nopDir is a directory handle of a frozen instance: its sync does nothing.
type nopDir struct{ vfs.File }

func (nopDir) Sync() error                    { return nil }
func (nopDir) Close() error                   { return nil }
func (nopDir) Stat() (vfs.FileInfo, error)    { return nil, os.ErrInvalid }
func (nopDir) Fd() uintptr                    { return vfs.InvalidFd }
func (nopDir) SyncData() error                { return nil }
func (nopDir) SyncTo(int64) (bool, error)     { return true, nil }
func (nopDir) Prefetch(int64, int64) error    { return nil }
func (nopDir) Preallocate(int64, int64) error { return nil }

type onceCloser struct {
	once sync.Once
	c    io.Closer
	err  error
}

func (o *onceCloser) Close() error {
	o.once.Do(func() { o.err = o.c.Close() })
	return o.err
}
