package ledger

import (
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/harn-dev/harn/util/clock"
)

// fakeDB is the DB side of the compaction scheduler: allowed concurrent
// compactions, and how many more it wants.
type fakeDB struct {
	mu        sync.Mutex
	allowed   int
	wants     int
	scheduled int
}

func (d *fakeDB) GetAllowedWithoutPermission() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.allowed
}

func (d *fakeDB) GetWaitingCompaction() (bool, pebble.WaitingCompaction) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wants > 0, pebble.WaitingCompaction{}
}

func (d *fakeDB) Schedule(pebble.CompactionGrantHandle) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wants == 0 {
		return false
	}
	d.wants--
	d.scheduled++
	return true
}

func (d *fakeDB) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.scheduled
}

// TestAnIdleLedgerWakesNothing: the ledger's compaction scheduler arms no
// timer while no compaction runs; a compaction refused for want of a slot
// is granted when the running one ends; once none runs, no timer is left.
func TestAnIdleLedgerWakesNothing(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s := newCompactionScheduler(clk)
	db := &fakeDB{allowed: 1}
	s.Register(2, db)
	defer s.Unregister()
	if n := clk.Waiters(); n != 0 {
		t.Fatalf("an idle scheduler arms %d timers", n)
	}
	ok, h := s.TrySchedule()
	if !ok {
		t.Fatal("the first compaction was refused")
	}
	db.mu.Lock()
	db.wants = 1
	db.mu.Unlock()
	if ok, _ := s.TrySchedule(); ok {
		t.Fatal("a second compaction over the one slot was granted")
	}
	if !clk.BlockUntil(1, 5*time.Second) {
		t.Fatal("no look again while a compaction runs")
	}
	h.Done() // the slot frees: the waiting one is granted (and runs)
	if db.count() != 1 {
		t.Fatalf("%d compactions scheduled after the slot freed, want 1", db.count())
	}
	s.Done() // the granted one ends: nothing runs, nothing is left armed
	clk.Advance(retryEvery)
	for i := 0; clk.Waiters() != 0; i++ {
		if i > 5000 {
			t.Fatalf("the scheduler still arms %d timers with nothing waiting", clk.Waiters())
		}
		time.Sleep(time.Millisecond)
	}
}
