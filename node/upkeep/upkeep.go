// Package upkeep is the room of the node's upkeep of its local half: the
// hooks' spool drained at the start and every SpoolInterval, the reaper
// that ends the sessions whose agent process is gone every ReapInterval,
// the ledger's diagnostics (a corrupt spool file, an event from the
// future), and the tool process groups a harn session starts, recorded
// so that a restarted node kills what its previous run left. Its loops
// run in Run's goroutines until Close. It reads the rest of the node
// through Deps.
package upkeep

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/node/spool"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/procinfo"
)

// Ledger is what the room keeps in the ledger.
type Ledger interface {
	AddDiagnostic(d ledger.Diagnostic) (ledger.Diagnostic, error)
	PutKV(space string, k, v []byte) error
	DeleteKV(space string, k []byte) error
	DeleteKVSync(space string, k []byte) error
	ScanKV(space string, prefix []byte, fn func(k, v []byte) error) error
}

// Procs tells whether an agent process still exists.
type Procs interface {
	Alive(pid int, start uint64) bool
}

// Deps wires the room to the rest of the node.
type Deps struct {
	DataDir string
	Clock   clock.Clock
	Log     *slog.Logger
	Ledger  Ledger
	// Sessions are this node's sessions; Ingest records events.
	Sessions *sessions.Store
	Ingest   func([]presence.Event) error
	Procs    Procs
	// SpoolInterval and ReapInterval pace the loops.
	SpoolInterval, ReapInterval time.Duration
}

// Keeper is the upkeep room.
type Keeper struct {
	Deps
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// New builds the room. It does no I/O.
func New(d Deps) *Keeper { return &Keeper{Deps: d, stop: make(chan struct{})} }

// Run starts the spool and reap loops.
func (k *Keeper) Run() {
	for _, fn := range []func(){k.spoolLoop, k.reapLoop} {
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			fn()
		}()
	}
}

// Close stops the loops and waits for them. It is safe twice.
func (k *Keeper) Close() {
	k.once.Do(func() { close(k.stop) })
	k.wg.Wait()
}

func (k *Keeper) ingest(evs []presence.Event) (struct{}, error) { return struct{}{}, k.Ingest(evs) }

// DrainSpool ingests every spooled record in order and removes each file
// once its events are durable. A record that cannot be decoded is moved to
// spool/bad and recorded as a diagnostic.
func (k *Keeper) DrainSpool() {
	dir := layout.SpoolDir(k.DataDir)
	files, err := spool.Pending(dir)
	if err != nil {
		k.Log.Error("spool", "err", err)
		return
	}
	for _, f := range files {
		rec, err := spool.Read(f)
		if errors.Is(err, spool.ErrCorrupt) {
			k.Diagnose("spool", err.Error(), 0, "")
			if qerr := spool.Quarantine(f); qerr != nil {
				k.Log.Error("spool quarantine", "file", f, "err", qerr)
			}
			continue
		}
		if err != nil {
			k.Log.Error("spool read", "file", f, "err", err)
			continue
		}
		if len(rec.Events) > 0 {
			if _, err := k.ingest(rec.Events); err != nil {
				if errors.Is(err, presence.ErrInvalidEvent) {
					k.Diagnose("spool", err.Error(), 0, "")
					spool.Quarantine(f)
				} else {
					k.Log.Error("spool ingest", "file", f, "err", err)
				}
				continue
			}
		}
		if d := rec.Diagnostic; d != nil {
			k.AddDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(d.TS), Source: d.Source,
				Error: d.Error, InputBytes: d.InputBytes, InputDigest: d.InputDigest})
		}
		if err := spool.Remove(f); err != nil {
			k.Log.Error("spool remove", "file", f, "err", err)
		}
	}
	spool.CleanTemps(dir, k.Clock.Now(), time.Hour)
}

func (k *Keeper) spoolLoop() { k.every(k.SpoolInterval, k.DrainSpool) }

func (k *Keeper) Diagnose(source, msg string, size int, digest string) {
	k.AddDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(k.Clock.Now()), Source: source,
		Error: msg, InputBytes: size, InputDigest: digest})
}

func (k *Keeper) AddDiagnostic(d ledger.Diagnostic) {
	if _, err := k.Ledger.AddDiagnostic(d); err != nil {
		k.Log.Error("diagnostic", "err", err)
	}
}

// ReasonProcessGone is the session.end reason when the agent's process is
// gone without a hook saying so (an interrupt or a crash).
const ReasonProcessGone = "process_gone"

// SystemProcs checks processes through /proc.
type SystemProcs struct{}

func (SystemProcs) Alive(pid int, start uint64) bool {
	return procinfo.Alive(procinfo.Proc{PID: pid, Start: start})
}

func (k *Keeper) reapLoop() { k.every(k.ReapInterval, func() { k.Reap() }) }

// every runs fn every d until the node stops.
func (k *Keeper) every(d time.Duration, fn func()) {
	t := k.Clock.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C():
			fn()
		}
	}
}

// Reap ends, with an explicit session.end (reason process_gone), every live
// session whose recorded agent process no longer exists.
func (k *Keeper) Reap() int {
	type proc struct {
		pid   int
		start uint64
	}
	alive := map[proc]bool{}
	var ends []presence.Event
	now := k.Clock.Now()
	for _, s := range k.Sessions.Live() {
		if s.AgentPID <= 0 {
			continue
		}
		p := proc{s.AgentPID, s.AgentPIDStart}
		a, ok := alive[p]
		if !ok {
			a = k.Procs.Alive(p.pid, p.start)
			alive[p] = a
		}
		if a {
			continue
		}
		ts := now
		if !ts.After(s.LastEventAt) {
			ts = s.LastEventAt.Add(time.Millisecond)
		}
		ends = append(ends, presence.Event{SessionID: s.SessionID, ParentSessionID: s.ParentSessionID,
			Type: presence.TypeSessionEnd, TS: ts, Agent: s.Agent,
			Attrs: map[string]any{presence.AttrReason: ReasonProcessGone}})
	}
	if len(ends) == 0 {
		return 0
	}
	if _, err := k.ingest(ends); err != nil {
		k.Log.Error("reap", "err", err)
		return 0
	}
	for _, e := range ends {
		k.Log.Info("session ended: agent process gone", "session", e.SessionID)
	}
	return len(ends)
}
