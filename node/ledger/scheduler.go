package ledger

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/harn-dev/harn/util/clock"
)

// compactionScheduler is Pebble's ConcurrencyLimitScheduler without its
// 100 ms ticker, which woke every idle node ten times a second: a
// compaction is granted when the DB asks (TrySchedule), when a running one
// ends (Done), when the DB says it may run more (after a flush), and, as
// the ticker did, every retryEvery while compactions run. An idle ledger
// wakes nothing.
type compactionScheduler struct {
	clock clock.Clock

	mu           sync.Mutex
	db           pebble.DBForCompaction
	running      int
	lastAllowed  int
	unregistered bool
	granting     bool
	grantingCond *sync.Cond

	poke chan struct{} // capacity 1: look again
	stop chan struct{}
	done chan struct{}
}

// retryEvery is how often the grants are looked at again while
// compactions run.
const retryEvery = time.Second

var _ pebble.CompactionScheduler = (*compactionScheduler)(nil)

func newCompactionScheduler(clk clock.Clock) *compactionScheduler {
	s := &compactionScheduler{clock: clk, poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.grantingCond = sync.NewCond(&s.mu)
	return s
}

// Register starts the scheduler's goroutine (Pebble calls it once, at
// open); Unregister ends it.
func (s *compactionScheduler) Register(_ int, db pebble.DBForCompaction) {
	s.mu.Lock()
	s.db = db
	s.mu.Unlock()
	go s.run()
}

func (s *compactionScheduler) Unregister() {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unregistered = true
	for s.granting {
		s.grantingCond.Wait()
	}
}

// run looks again when poked, and then every retryEvery while
// compactions run.
func (s *compactionScheduler) run() {
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			return
		case <-s.poke:
		}
		for {
			s.mu.Lock()
			s.tryGrantLockedAndUnlock()
			s.mu.Lock()
			busy := s.running > 0
			s.mu.Unlock()
			if !busy {
				break
			}
			t := s.clock.NewTimer(retryEvery)
			select {
			case <-s.stop:
				t.Stop()
				return
			case <-t.C():
			case <-s.poke:
				t.Stop()
			}
		}
	}
}

func (s *compactionScheduler) pokeNow() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

func (s *compactionScheduler) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unregistered {
		return false, nil
	}
	s.lastAllowed = s.db.GetAllowedWithoutPermission()
	if s.lastAllowed > s.running {
		s.running++
		return true, s
	}
	s.pokeNow()
	return false, nil
}

func (s *compactionScheduler) UpdateGetAllowedWithoutPermission() {
	s.mu.Lock()
	allowed := s.db.GetAllowedWithoutPermission()
	grow := allowed > s.lastAllowed
	s.lastAllowed = allowed
	s.mu.Unlock()
	if grow {
		s.pokeNow()
	}
}

// The grant handle.

func (s *compactionScheduler) Started()                                          {}
func (s *compactionScheduler) MeasureCPU(pebble.CompactionGoroutineKind)         {}
func (s *compactionScheduler) CumulativeStats(pebble.CompactionGrantHandleStats) {}

func (s *compactionScheduler) Done() {
	s.mu.Lock()
	s.running--
	s.tryGrantLockedAndUnlock()
}

// tryGrantLockedAndUnlock grants what the DB may run now, as Pebble's
// scheduler does; it is called with s.mu held and returns with it
// released.
func (s *compactionScheduler) tryGrantLockedAndUnlock() {
	defer s.mu.Unlock()
	if s.unregistered {
		return
	}
	for s.granting {
		s.grantingCond.Wait()
	}
	if s.unregistered {
		return
	}
	s.lastAllowed = s.db.GetAllowedWithoutPermission()
	toGrant := s.lastAllowed - s.running
	if toGrant <= 0 {
		return // a running one's Done looks again
	}
	s.granting = true
	s.mu.Unlock()
	for toGrant > 0 {
		if waiting, _ := s.db.GetWaitingCompaction(); !waiting {
			break
		}
		if !s.db.Schedule(s) {
			break
		}
		s.mu.Lock()
		s.running++
		toGrant--
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.granting = false
	s.grantingCond.Broadcast()
}
