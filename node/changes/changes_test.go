package changes

import (
	"sync"
	"testing"

	"pgregory.net/rapid"
)

func pending(ch <-chan struct{}) (signal, closed bool) {
	select {
	case _, ok := <-ch:
		return ok, !ok
	default:
		return false, false
	}
}

func TestNotifyCoalescesIntoOnePendingSignal(t *testing.T) {
	b := New()
	ch, stop := b.Subscribe()
	defer stop()
	for range 100 {
		b.Notify()
	}
	if sig, _ := pending(ch); !sig {
		t.Fatal("no signal after 100 notifications")
	}
	if sig, _ := pending(ch); sig {
		t.Fatal("100 notifications left more than one signal pending")
	}
	if b.Seq() != 100 {
		t.Fatalf("seq %d, want 100", b.Seq())
	}
}

func TestNotifyWithoutSubscribersNeverBlocks(t *testing.T) {
	b := New()
	for range 1000 {
		b.Notify()
	}
	if b.Subscribers() != 0 {
		t.Fatal("subscribers out of nothing")
	}
}

func TestEndingASubscriptionClosesItsChannelOnce(t *testing.T) {
	b := New()
	ch, stop := b.Subscribe()
	stop()
	stop() // twice is safe
	if _, closed := pending(ch); !closed {
		t.Fatal("the channel of an ended subscription is open")
	}
	b.Notify() // never sends on a closed channel
	if b.Subscribers() != 0 {
		t.Fatalf("%d subscribers after the only one ended", b.Subscribers())
	}
}

func TestCloseEndsEverySubscriptionAndRefusesNewOnes(t *testing.T) {
	b := New()
	a, stopA := b.Subscribe()
	c, _ := b.Subscribe()
	b.Close()
	b.Close()
	for _, ch := range []<-chan struct{}{a, c} {
		if _, closed := pending(ch); !closed {
			t.Fatal("a subscription survived Close")
		}
	}
	stopA() // after Close: safe
	late, stop := b.Subscribe()
	defer stop()
	if _, closed := pending(late); !closed {
		t.Fatal("a subscription after Close is open")
	}
	b.Notify()
}

// TestEverySubscriberSeesEveryChange: whatever the sequence of
// subscriptions, ends and notifications, a live subscriber has a signal
// pending after a notification it did not drain yet, and an ended one is
// closed and never signalled again.
func TestEverySubscriberSeesEveryChange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := New()
		type model struct {
			ch      <-chan struct{}
			stop    func()
			ended   bool
			pending bool
		}
		var subs []*model
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				ch, stop := b.Subscribe()
				subs = append(subs, &model{ch: ch, stop: stop})
			case 1:
				b.Notify()
				for _, s := range subs {
					if !s.ended {
						s.pending = true
					}
				}
			case 2:
				if len(subs) > 0 {
					s := subs[rapid.IntRange(0, len(subs)-1).Draw(t, "end")]
					s.stop()
					s.ended = true
				}
			case 3:
				if len(subs) > 0 {
					s := subs[rapid.IntRange(0, len(subs)-1).Draw(t, "drain")]
					sig, closed := pending(s.ch)
					switch {
					case s.ended && !closed:
						t.Fatal("an ended subscription is open")
					case !s.ended && sig != s.pending:
						t.Fatalf("signal %v, want %v", sig, s.pending)
					}
					s.pending = false
				}
			}
		}
		live := 0
		for _, s := range subs {
			if !s.ended {
				live++
			}
		}
		if b.Subscribers() != live {
			t.Fatalf("%d subscribers, want %d", b.Subscribers(), live)
		}
	})
}

func TestConcurrentNotifyAndSubscribe(t *testing.T) {
	b := New()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 500 {
				b.Notify()
			}
		}()
		go func() {
			defer wg.Done()
			for range 100 {
				ch, stop := b.Subscribe()
				pending(ch)
				stop()
			}
		}()
	}
	wg.Wait()
	b.Close()
	if b.Subscribers() != 0 {
		t.Fatal("subscribers left")
	}
}

func BenchmarkNotifyWithoutSubscribers(b *testing.B) {
	br := New()
	b.ReportAllocs()
	for b.Loop() {
		br.Notify()
	}
}
