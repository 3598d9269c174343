package clock

import (
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestFakeNowMovesOnlyWhenAdvanced(t *testing.T) {
	f := NewFake(t0)
	if !f.Now().Equal(t0) {
		t.Fatalf("now %v", f.Now())
	}
	f.Advance(time.Second)
	if got := f.Now(); !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("now %v", got)
	}
}

func TestFakeTimerFiresOnlyWhenDue(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(10 * time.Second)
	f.Advance(9 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("fired early")
	default:
	}
	f.Advance(time.Second)
	select {
	case at := <-tm.C():
		if !at.Equal(t0.Add(10 * time.Second)) {
			t.Fatalf("fired at %v", at)
		}
	default:
		t.Fatal("did not fire")
	}
	if f.Waiters() != 0 {
		t.Fatalf("a fired timer stays armed")
	}
}

func TestFakeTimerStopAndReset(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer reports false")
	}
	if tm.Stop() {
		t.Fatal("second Stop reports true")
	}
	f.Advance(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer reports it was armed")
	}
	f.Advance(time.Second)
	select {
	case <-tm.C():
	default:
		t.Fatal("reset timer did not fire")
	}
}

func TestFakeTickerTicksEveryPeriodInOrder(t *testing.T) {
	f := NewFake(t0)
	tk := f.NewTicker(time.Second)
	defer tk.Stop()
	for i := 1; i <= 3; i++ {
		f.Advance(time.Second)
		select {
		case at := <-tk.C():
			if want := t0.Add(time.Duration(i) * time.Second); !at.Equal(want) {
				t.Fatalf("tick %d at %v, want %v", i, at, want)
			}
		default:
			t.Fatalf("tick %d missing", i)
		}
	}
	// Unread ticks are dropped, as with time.Ticker.
	f.Advance(5 * time.Second)
	<-tk.C()
	select {
	case <-tk.C():
		t.Fatal("a ticker buffered more than one tick")
	default:
	}
	tk.Reset(time.Minute)
	f.Advance(59 * time.Second)
	select {
	case <-tk.C():
		t.Fatal("reset ticker ticked early")
	default:
	}
}

func TestFakeAdvanceFiresInDueOrder(t *testing.T) {
	f := NewFake(t0)
	var order []int
	done := make(chan int, 3)
	f.AfterFunc(3*time.Second, func() { done <- 3 })
	f.AfterFunc(time.Second, func() { done <- 1 })
	f.AfterFunc(2*time.Second, func() { done <- 2 })
	if got := f.sortedDue(); len(got) != 3 || !got[0].Equal(t0.Add(time.Second)) {
		t.Fatalf("due %v", got)
	}
	f.Advance(time.Second)
	order = append(order, <-done)
	f.Advance(2 * time.Second)
	a, b := <-done, <-done
	order = append(order, min(a, b), max(a, b))
	if order[0] != 1 || order[1] != 2 || order[2] != 3 {
		t.Fatalf("order %v", order)
	}
}

func TestFakeAfterFuncStopped(t *testing.T) {
	f := NewFake(t0)
	var n atomic.Int32
	tm := f.AfterFunc(time.Second, func() { n.Add(1) })
	tm.Stop()
	f.Advance(time.Hour)
	if n.Load() != 0 {
		t.Fatal("a stopped AfterFunc ran")
	}
}

func TestFakeBlockUntilSeesArming(t *testing.T) {
	f := NewFake(t0)
	go func() { f.NewTimer(time.Second) }()
	if !f.BlockUntil(1, 5*time.Second) {
		t.Fatal("BlockUntil did not see the timer")
	}
	if f.BlockUntil(2, 10*time.Millisecond) {
		t.Fatal("BlockUntil saw a timer that was never armed")
	}
	if d, ok := f.NextDue(); !ok || !d.Equal(t0.Add(time.Second)) {
		t.Fatalf("next due %v %v", d, ok)
	}
}

func TestSleepReturnsEarlyOnStop(t *testing.T) {
	f := NewFake(t0)
	stop := make(chan struct{})
	res := make(chan bool, 1)
	go func() { res <- Sleep(f, time.Minute, stop) }()
	f.BlockUntil(1, 5*time.Second)
	close(stop)
	if <-res {
		t.Fatal("Sleep reported a full wait after stop")
	}
	go func() { res <- Sleep(f, time.Minute, nil) }()
	f.BlockUntil(1, 5*time.Second)
	f.Advance(time.Minute)
	if !<-res {
		t.Fatal("Sleep did not report the full wait")
	}
}

func TestRealClock(t *testing.T) {
	var c Clock = Real{}
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Stop()
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
}
