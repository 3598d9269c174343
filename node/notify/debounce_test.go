package notify

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
)

// debounceRig is an engine on a fake clock with one json webhook (every
// kind) whose sender records and accepts.
type debounceRig struct {
	clk *fakeClock
	snd *recSender
	e   *Engine
}

func newDebounceRig(t *testing.T, cfg Config, desk Desktop) *debounceRig {
	t.Helper()
	r := &debounceRig{clk: newFakeClock(), snd: &recSender{}}
	cfg.Logger = quiet()
	cfg.Jitter = noJitter
	r.e = New(cfg, r.clk, r.snd, desk)
	t.Cleanup(func() { _ = r.e.Close() })
	if err := r.e.SetWebhooks([]Webhook{mustHook(t, "http://127.0.0.1:1/hook", "", "json")}); err != nil {
		t.Fatal(err)
	}
	return r
}

func needsInput(id string) Session {
	s := view(id)
	s.Activity = string(presence.ActivityNeedsInput)
	return s
}

// sentKinds waits until n messages were sent and returns their kinds and
// session ids.
func (r *debounceRig) sent(t *testing.T, n int) []Payload {
	t.Helper()
	eventually(t, "messages to be sent", func() bool { return r.snd.count() >= n })
	var out []Payload
	for _, req := range r.snd.all() {
		var p Payload
		if err := json.Unmarshal(req.Body, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if len(out) != n {
		t.Fatalf("sent %d messages, want %d: %+v", len(out), n, out)
	}
	return out
}

// settled waits until every queued message was delivered, so that a count
// of zero or one proves nothing else is on its way.
func (r *debounceRig) settled(t *testing.T) {
	t.Helper()
	eventually(t, "queues to drain", func() bool {
		for _, w := range r.e.Stats().Webhooks {
			if w.Queued != 0 {
				return false
			}
		}
		return true
	})
}

func TestDebounceSendsOnlyIfStateStillHoldsAfterWindow(t *testing.T) {
	r := newDebounceRig(t, Config{Debounce: 3 * time.Second}, nil)
	r.e.Observe([]Session{view("s1")})
	r.e.Observe([]Session{needsInput("s1")})
	r.clk.Advance(2 * time.Second)
	r.settled(t)
	if n := r.snd.count(); n != 0 {
		t.Fatalf("sent %d before the window ended", n)
	}
	r.clk.Advance(time.Second)
	p := r.sent(t, 1)
	if p[0].Kind != KindNeedsInput || p[0].Session.ID != "s1" {
		t.Fatalf("got %+v", p[0])
	}
	if p[0].At != "2026-08-12T10:00:00.000Z" {
		t.Fatalf("at is when the state began: %s", p[0].At)
	}

	// A state that ends inside the window is never told.
	r.e.Observe([]Session{view("s1"), view("s2")})
	r.e.Observe([]Session{view("s1"), needsInput("s2")})
	r.clk.Advance(time.Second)
	r.e.Observe([]Session{view("s1"), view("s2")})
	r.clk.Advance(time.Minute)
	r.settled(t)
	if n := r.snd.count(); n != 1 {
		t.Fatalf("sent %d, want 1: a state that left within the window was told", n)
	}
}

func TestDebounceFlappingStateDoesNotSpam(t *testing.T) {
	r := newDebounceRig(t, Config{Debounce: 3 * time.Second}, nil)
	for range 50 {
		r.e.Observe([]Session{needsInput("s1")})
		r.clk.Advance(time.Second)
		r.e.Observe([]Session{view("s1")})
		r.clk.Advance(time.Second)
	}
	r.settled(t)
	if n := r.snd.count(); n != 0 {
		t.Fatalf("a state flapping faster than the window sent %d messages", n)
	}
	if p := r.clk.pending(); len(p) != 0 {
		t.Fatalf("pending timers left behind: %v", p)
	}
	r.e.Observe([]Session{needsInput("s1")})
	r.clk.Advance(3 * time.Second)
	r.sent(t, 1)
}

func TestCooldownSuppressesResendAfterBriefAbsence(t *testing.T) {
	r := newDebounceRig(t, Config{Debounce: 3 * time.Second, Cooldown: time.Minute}, nil)
	r.e.Observe([]Session{needsInput("s1")})
	r.clk.Advance(3 * time.Second)
	r.sent(t, 1)
	// Away for one second (shorter than the window), back and holding.
	r.e.Observe([]Session{view("s1")})
	r.clk.Advance(time.Second)
	r.e.Observe([]Session{needsInput("s1")})
	r.clk.Advance(10 * time.Second)
	r.settled(t)
	if n := r.snd.count(); n != 1 {
		t.Fatalf("sent %d, want 1: a brief absence within the cooldown re-sent", n)
	}
}

// TestNoRepeatWithinFiveMinutesForTheSameSessionAndKind: README's rule.
// A session that needs input, is answered, works for 20 s and needs input
// again 24 s after the first message is not told again; once the 5 min
// cooldown has passed, a new episode is.
func TestNoRepeatWithinFiveMinutesForTheSameSessionAndKind(t *testing.T) {
	r := newDebounceRig(t, Config{}, nil) // the defaults: 3 s debounce, 5 min cooldown
	r.e.Observe([]Session{needsInput("s1")})
	r.clk.Advance(3 * time.Second)
	r.sent(t, 1)
	r.e.Observe([]Session{view("s1")}) // answered
	r.clk.Advance(21 * time.Second)    // away far longer than the window
	r.e.Observe([]Session{needsInput("s1")})
	r.clk.Advance(3 * time.Second) // 24 s after the first message
	r.settled(t)
	r.clk.Advance(time.Minute)
	r.settled(t)
	if n := r.snd.count(); n != 1 {
		t.Fatalf("sent %d, want 1: a needs_input was repeated within 5 min", n)
	}
	r.e.Observe([]Session{view("s1")})
	r.clk.Advance(5 * time.Minute)
	r.e.Observe([]Session{needsInput("s1")})
	r.clk.Advance(3 * time.Second)
	r.sent(t, 2)
}

func TestCooldownExpiredResendsAfterBriefAbsence(t *testing.T) {
	r := newDebounceRig(t, Config{Debounce: 3 * time.Second, Cooldown: time.Minute}, nil)
	r.e.Observe([]Session{needsInput("s1")})
	r.clk.Advance(3 * time.Second)
	r.sent(t, 1)
	r.clk.Advance(2 * time.Minute)
	r.e.Observe([]Session{view("s1")})
	r.clk.Advance(time.Second)
	r.e.Observe([]Session{needsInput("s1")})
	r.clk.Advance(3 * time.Second)
	r.sent(t, 2)
}

func TestSameTransitionOfAnotherSessionIsNotHeldBack(t *testing.T) {
	r := newDebounceRig(t, Config{Debounce: 3 * time.Second, Cooldown: time.Hour}, nil)
	r.e.Observe([]Session{needsInput("s1")})
	r.clk.Advance(3 * time.Second)
	r.e.Observe([]Session{needsInput("s1"), needsInput("s2")})
	r.clk.Advance(3 * time.Second)
	p := r.sent(t, 2)
	if p[0].Session.ID != "s1" || p[1].Session.ID != "s2" {
		t.Fatalf("got %s, %s", p[0].Session.ID, p[1].Session.ID)
	}
}

func TestBaselineDoesNotTellExistingStates(t *testing.T) {
	r := newDebounceRig(t, Config{Debounce: 3 * time.Second}, nil)
	r.e.Baseline([]Session{needsInput("s1")})
	r.e.Observe([]Session{needsInput("s1"), needsInput("s2")})
	r.clk.Advance(3 * time.Second)
	p := r.sent(t, 1)
	if p[0].Session.ID != "s2" {
		t.Fatalf("told %s; s1 was in the baseline", p[0].Session.ID)
	}
	r.settled(t)
	if n := r.snd.count(); n != 1 {
		t.Fatalf("sent %d", n)
	}
}

func TestSessionGoneCancelsPendingNotification(t *testing.T) {
	r := newDebounceRig(t, Config{Debounce: 3 * time.Second}, nil)
	r.e.Observe([]Session{needsInput("s1")})
	r.e.Observe(nil)
	r.clk.Advance(time.Minute)
	r.settled(t)
	if n := r.snd.count(); n != 0 {
		t.Fatalf("a session that left was told: %d", n)
	}
	if p := r.clk.pending(); len(p) != 0 {
		t.Fatalf("pending timers: %v", p)
	}
}

func TestMessageCarriesLatestViewAtSendTime(t *testing.T) {
	r := newDebounceRig(t, Config{Debounce: 3 * time.Second}, nil)
	s := view("s1")
	s.TaskState, s.BlockerReason = string(presence.TaskBlocked), "first"
	r.e.Observe([]Session{s})
	s = s.fresh()
	s.BlockerReason = "second"
	r.clk.Advance(time.Second)
	r.e.Observe([]Session{s})
	r.clk.Advance(2 * time.Second)
	p := r.sent(t, 1)
	if p[0].Kind != KindBlocked || p[0].Session.Reason != "second" {
		t.Fatalf("got %+v", p[0])
	}
}

func TestWebhookOnFilterSelectsKinds(t *testing.T) {
	clk, snd := newFakeClock(), &recSender{}
	e := New(Config{Logger: quiet(), Debounce: time.Second}, clk, snd, nil)
	defer e.Close()
	blocked := mustHook(t, "http://127.0.0.1:1/blocked", "blocked", "json")
	all := mustHook(t, "http://127.0.0.1:1/all", "", "json")
	if err := e.SetWebhooks([]Webhook{blocked, all}); err != nil {
		t.Fatal(err)
	}
	s := needsInput("s1")
	e.Observe([]Session{s})
	clk.Advance(time.Second)
	s = s.fresh()
	s.TaskState, s.BlockerReason = string(presence.TaskBlocked), "r"
	e.Observe([]Session{s})
	clk.Advance(time.Second)
	eventually(t, "three messages", func() bool { return snd.count() == 3 })
	per := map[string]int{}
	for _, r := range snd.all() {
		per[r.URL]++
	}
	if per[blocked.URL] != 1 || per[all.URL] != 2 {
		t.Fatalf("per webhook: %v", per)
	}
}

// blockingDesktop blocks every notification until released.
type blockingDesktop struct {
	mu      sync.Mutex
	started int
	release chan struct{}
}

func (d *blockingDesktop) Notify(ctx context.Context, _, _ string) error {
	d.mu.Lock()
	d.started++
	d.mu.Unlock()
	select {
	case <-d.release:
	case <-ctx.Done():
	}
	return nil
}

func TestDesktopNeverBlocksEngine(t *testing.T) {
	desk := &blockingDesktop{release: make(chan struct{})}
	r := newDebounceRig(t, Config{Debounce: time.Second, DesktopQueue: 2}, desk)
	r.e.Observe([]Session{needsInput("a")})
	r.clk.Advance(time.Second)
	eventually(t, "the desktop to be busy", func() bool {
		desk.mu.Lock()
		defer desk.mu.Unlock()
		return desk.started == 1
	})
	var views []Session
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		views = append(views, needsInput(id))
	}
	r.e.Observe(views)
	r.clk.Advance(time.Second) // five more; the desktop is stuck on the first
	r.sent(t, 6)               // webhooks went on regardless
	st := r.e.Stats().Desktop
	// One being shown, two waiting, the rest dropped and counted.
	if st.Dropped != 3 {
		t.Fatalf("desktop stats %+v, want 3 dropped", st)
	}
	close(desk.release)
	eventually(t, "desktop to show the rest", func() bool { return r.e.Stats().Desktop.Shown == 3 })
}
