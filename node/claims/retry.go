package claims

import (
	"context"
	"slices"
	"time"

	"github.com/harn-dev/harn/raftstore"
)

// Bounds of the retry of a claim that could not be recorded.
const (
	retryMin = 250 * time.Millisecond
	retryMax = 10 * time.Second
)

// Rows tells the session's row what became of its claims (the node ingests
// claim.pending, claim.write and claim.release events). Paths are the
// hook's absolute paths, as the row lists them.
type Rows interface {
	ClaimPending(session string, abs []string)
	ClaimLanded(session string, abs []string)
	ClaimDropped(session string, abs []string)
}

// pendingClaim is a claim the registry did not record yet.
type pendingClaim struct {
	id            uint64 // its journal key
	session, repo string
	paths         []string
	abs           map[string]string // path -> the hook's absolute path
}

func absOf(r Request) map[string]string {
	m := map[string]string{}
	for i, p := range r.Paths {
		if i < len(r.Abs) {
			m[p] = r.Abs[i]
		}
	}
	return m
}

func pick(abs map[string]string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if a, ok := abs[p]; ok {
			out = append(out, a)
		}
	}
	return out
}

// addPending queues a claim for the retry and tells the row.
func (d *Decider) addPending(r Request, need []string) {
	d.mu.Lock()
	d.nextID++
	pc := pendingClaim{id: d.nextID, session: r.Session, repo: r.Repo, paths: need, abs: absOf(r)}
	d.pending = append(d.pending, pc)
	d.mu.Unlock()
	d.persist(pc) // before the row says pending: a restart keeps retrying it
	if d.cfg.Rows != nil {
		if a := pick(pc.abs, need); len(a) > 0 {
			d.cfg.Rows.ClaimPending(r.Session, a)
		}
	}
	d.kickRetry()
}

// kickRetry starts the retry (once) and wakes it.
func (d *Decider) kickRetry() {
	d.startOnce.Do(func() { go d.retryLoop() })
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Pending lists a session's claims not recorded yet, by repository.
func (d *Decider) Pending(session string) []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Request
	for _, pc := range d.pending {
		if pc.session == session {
			out = append(out, Request{Session: session, Repo: pc.repo, Paths: slices.Clone(pc.paths)})
		}
	}
	return out
}

// retryLoop retries the pending claims with a bounded backoff until each
// lands or its session ends.
func (d *Decider) retryLoop() {
	defer close(d.done)
	backoff := retryMin
	for {
		d.mu.Lock()
		n := len(d.pending)
		d.mu.Unlock()
		if n == 0 {
			backoff = retryMin
			select {
			case <-d.kick:
				continue
			case <-d.stop:
				return
			}
		}
		t := d.cfg.Clock.NewTimer(backoff)
		select {
		case <-t.C():
		case <-d.stop:
			t.Stop()
			return
		}
		if d.retryOnce() {
			backoff = retryMin
		} else {
			backoff = min(backoff*2, retryMax)
		}
	}
}

// retryOnce tries every pending claim once; it reports whether all of
// them are settled.
func (d *Decider) retryOnce() bool {
	d.mu.Lock()
	todo := slices.Clone(d.pending)
	d.mu.Unlock()
	settled := map[int]bool{}
	var tell []func()
	for i, pc := range todo {
		if d.cfg.Describe.Describe(pc.session, d.cfg.Node).Ended {
			settled[i] = true
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Budget)
		err := d.cfg.Writer.Write(ctx, raftstore.ClaimCmd(pc.session, d.cfg.Node, pc.repo, d.cfg.Clock.Now(), pc.paths...))
		cancel()
		if err != nil {
			continue
		}
		settled[i] = true
		var won, lost []string
		for _, p := range pc.paths {
			if c, ok := d.cfg.Table.ClaimOf(pc.repo, p); ok && c.SessionID == pc.session {
				won = append(won, p)
			} else {
				lost = append(lost, p)
			}
		}
		if d.cfg.Rows != nil {
			pc, won, lost := pc, won, lost
			tell = append(tell, func() {
				if a := pick(pc.abs, won); len(a) > 0 {
					d.cfg.Rows.ClaimLanded(pc.session, a)
				}
				if a := pick(pc.abs, lost); len(a) > 0 {
					d.cfg.Rows.ClaimDropped(pc.session, a)
				}
			})
		}
	}
	// The rows are told once the pending list says so too.
	defer func() {
		for _, f := range tell {
			f()
		}
	}()
	d.mu.Lock()
	defer d.mu.Unlock()
	// Claims queued meanwhile stay; the settled ones were the first
	// len(todo), unless a release removed some (dropPending).
	keep := d.pending[:0:0]
	for _, pc := range d.pending {
		done := false
		for i, t := range todo {
			if settled[i] && t.id == pc.id && slices.Equal(t.paths, pc.paths) {
				done = true
				break
			}
		}
		if !done {
			keep = append(keep, pc)
		} else {
			d.unpersist(pc.id)
		}
	}
	d.pending = keep
	return len(keep) == 0
}

// dropPending forgets a session's pending claims on paths of repo (all
// paths when paths is nil); it returns the absolute paths dropped.
func (d *Decider) dropPending(session, repo string, paths []string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var dropped []string
	keep := d.pending[:0:0]
	for _, pc := range d.pending {
		if pc.session != session || (repo != "" && pc.repo != repo) {
			keep = append(keep, pc)
			continue
		}
		var rest []string
		for _, p := range pc.paths {
			if paths == nil || slices.Contains(paths, p) {
				if a, ok := pc.abs[p]; ok {
					dropped = append(dropped, a)
				}
				continue
			}
			rest = append(rest, p)
		}
		if len(rest) > 0 {
			if len(rest) < len(pc.paths) {
				pc.paths = rest
				d.persist(pc)
			}
			keep = append(keep, pc)
		} else {
			d.unpersist(pc.id)
		}
	}
	d.pending = keep
	return dropped
}

// Close stops the retry and waits for it. Claims still pending then are
// not retried: they end with the node's sessions.
func (d *Decider) Close() {
	d.closeOnce.Do(func() { close(d.stop) })
	d.startOnce.Do(func() { close(d.done) }) // never started
	<-d.done
}

// Refused tells the row that r's write was denied before its claim was
// taken: the paths the session neither holds nor waits for leave the row.
func (d *Decider) Refused(r Request) {
	if d.cfg.Rows == nil || len(r.Abs) != len(r.Paths) {
		return
	}
	d.mu.Lock()
	waiting := map[string]bool{}
	for _, pc := range d.pending {
		if pc.session == r.Session && pc.repo == r.Repo {
			for _, p := range pc.paths {
				waiting[p] = true
			}
		}
	}
	d.mu.Unlock()
	var drop []string
	for i, p := range r.Paths {
		if c, ok := d.cfg.Table.ClaimOf(r.Repo, p); (ok && c.SessionID == r.Session) || waiting[p] {
			continue
		}
		drop = append(drop, r.Abs[i])
	}
	if len(drop) > 0 {
		d.cfg.Rows.ClaimDropped(r.Session, drop)
	}
}
