package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/notify"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

var t0 = time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)

// recorder is a notify.Sender that keeps what it was given.
type recorder struct{ got chan notify.Payload }

func (r *recorder) Send(_ context.Context, req notify.Request) error {
	var p notify.Payload
	if err := json.Unmarshal(req.Body, &p); err != nil {
		return err
	}
	r.got <- p
	return nil
}

type fakeSessions struct {
	mu  sync.Mutex
	own []presence.State
}

func (f *fakeSessions) Own() []presence.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]presence.State(nil), f.own...)
}

func (f *fakeSessions) set(s ...presence.State) {
	f.mu.Lock()
	f.own = s
	f.mu.Unlock()
}

type fakeMesh struct {
	mu      sync.Mutex
	leading bool
	leader  string
	down    []Remote
	hooks   []raftstore.NotifyHook
	at      uint64
}

func (m *fakeMesh) Leading() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leading
}

func (m *fakeMesh) Leader() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leader
}

func (m *fakeMesh) Unreachable() []Remote {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Remote(nil), m.down...)
}

func (m *fakeMesh) Webhooks() ([]raftstore.NotifyHook, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hooks, m.at
}

func hook(t *testing.T, url string) raftstore.NotifyHook {
	t.Helper()
	w, err := notify.NewWebhook(url, "", "json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeHook(w)
	if err != nil {
		t.Fatal(err)
	}
	return raftstore.NotifyHook{ID: w.ID, Spec: b}
}

type fixture struct {
	clk  *clock.Fake
	src  *fakeSessions
	mesh *fakeMesh
	rec  *recorder
	room *Room
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{clk: clock.NewFake(t0), src: &fakeSessions{}, mesh: &fakeMesh{}, rec: &recorder{got: make(chan notify.Payload, 64)}}
	f.mesh.hooks, f.mesh.at = []raftstore.NotifyHook{hook(t, "http://127.0.0.1:1/h")}, 1
	f.room = New(Config{Clock: f.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Sender: f.rec}, f.src, f.mesh)
	t.Cleanup(func() { f.room.Close() })
	f.room.Sync()
	return f
}

func st(id string, act presence.Activity, ts presence.TaskState) presence.State {
	return presence.State{SessionID: id, Name: "N" + id, Agent: "claude-code", Node: "a", Activity: act, TaskState: ts,
		LastEvidenceAt: t0, ActivityUpdatedAt: t0}
}

// next waits (bounded) for the next message.
func (f *fixture) next(t *testing.T) notify.Payload {
	t.Helper()
	select {
	case p := <-f.rec.got:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10 s")
		return notify.Payload{}
	}
}

// pending is the number of armed timers: debounces (and backoffs).
func (f *fixture) pending() int { return f.clk.Waiters() }

func TestOwnSessionTransitionToldOnceAfterDebounce(t *testing.T) {
	f := newFixture(t)
	f.room.Baseline(nil)
	f.src.set(st("s1", presence.ActivityNeedsInput, presence.TaskActive))
	f.room.observe()
	if f.pending() != 1 {
		t.Fatalf("%d timers armed, want the one debounce", f.pending())
	}
	f.clk.Advance(notify.DefaultDebounce)
	p := f.next(t)
	if p.Kind != notify.KindNeedsInput || p.Session.ID != "s1" {
		t.Fatalf("got %s of %s", p.Kind, p.Session.ID)
	}
	// Looking again at the same state arms nothing more.
	f.room.observe()
	if f.pending() != 0 {
		t.Fatalf("%d timers armed after the state was told", f.pending())
	}
}

func TestNonLeaderNeverTellsUnreachableSessions(t *testing.T) {
	f := newFixture(t)
	f.mesh.down = []Remote{{State: st("r1", presence.ActivityWorking, presence.TaskActive), Since: t0}}
	f.room.observe()
	if f.pending() != 0 {
		t.Fatalf("%d timers armed on a node that does not lead", f.pending())
	}
}

func TestLeaderTellsSessionsOfAnUnreachableNode(t *testing.T) {
	f := newFixture(t)
	f.mesh.leading = true
	f.room.observe() // leads, nothing down yet
	f.mesh.mu.Lock()
	f.mesh.down = []Remote{{State: st("r1", presence.ActivityWorking, presence.TaskActive), Since: f.clk.Now()}}
	f.mesh.mu.Unlock()
	f.room.observe()
	f.clk.Advance(notify.DefaultDebounce)
	p := f.next(t)
	if p.Kind != notify.KindUnreachable || p.Session.ID != "r1" || p.Session.Reachable {
		t.Fatalf("got %+v", p)
	}
}

func TestNewLeaderDoesNotRetellLongUnreachableNodes(t *testing.T) {
	f := newFixture(t)
	f.mesh.leader = "b"
	f.mesh.down = []Remote{{State: st("r1", presence.ActivityWorking, presence.TaskActive), Since: t0}}
	f.clk.Advance(time.Minute)
	f.room.observe() // a follower of b, a minute after r1's node died
	f.mesh.mu.Lock()
	f.mesh.leading, f.mesh.leader = true, "a"
	f.mesh.mu.Unlock()
	f.room.observe()
	if f.pending() != 0 {
		t.Fatalf("%d timers armed: a node unreachable before this one led was told by the leader before", f.pending())
	}
}

// TestNewLeaderTellsTheDeadLeadersSessions: the sessions of the leader
// that died were told by no one, however long the election took.
func TestNewLeaderTellsTheDeadLeadersSessions(t *testing.T) {
	f := newFixture(t)
	f.mesh.leader = "b"
	f.room.observe() // a follower of b
	f.clk.Advance(time.Minute)
	gone := st("r1", presence.ActivityWorking, presence.TaskActive)
	gone.Node = "b"
	f.mesh.mu.Lock()
	f.mesh.leading, f.mesh.leader = true, "a"
	f.mesh.down = []Remote{{State: gone, Since: t0}}
	f.mesh.mu.Unlock()
	f.room.observe()
	f.clk.Advance(notify.DefaultDebounce)
	if p := f.next(t); p.Kind != notify.KindUnreachable || p.Session.ID != "r1" {
		t.Fatalf("got %+v", p)
	}
}

// TestNewLeaderTellsADeathItDidNotFollowThrough: a node that died after
// this one last looked as a follower may not have been told by anyone.
func TestNewLeaderTellsADeathItDidNotFollowThrough(t *testing.T) {
	f := newFixture(t)
	f.mesh.leader = "b"
	f.room.observe() // a follower at t0
	f.clk.Advance(time.Minute)
	f.mesh.mu.Lock()
	f.mesh.leading, f.mesh.leader = true, "a"
	f.mesh.down = []Remote{{State: st("r1", presence.ActivityWorking, presence.TaskActive), Since: t0.Add(30 * time.Second)}}
	f.mesh.mu.Unlock()
	f.room.observe()
	f.clk.Advance(notify.DefaultDebounce)
	if p := f.next(t); p.Kind != notify.KindUnreachable || p.Session.ID != "r1" {
		t.Fatalf("got %+v", p)
	}
}

func TestBaselineAtStartDoesNotRetell(t *testing.T) {
	f := newFixture(t)
	s := st("s1", presence.ActivityNeedsInput, presence.TaskBlocked)
	s.BlockerReason = "waiting"
	f.room.Baseline([]presence.State{s})
	f.src.set(s)
	f.room.observe()
	if f.pending() != 0 {
		t.Fatalf("%d timers armed for states that held before the restart", f.pending())
	}
}

func TestSilentUsesTheSilenceRule(t *testing.T) {
	f := newFixture(t)
	f.src.set(st("s1", presence.ActivityWorking, presence.TaskActive))
	f.room.observe()
	if f.pending() != 0 {
		t.Fatalf("a working session with fresh evidence armed %d timers", f.pending())
	}
	f.clk.Advance(DefaultSilenceAfter + time.Second)
	f.room.observe()
	f.clk.Advance(notify.DefaultDebounce)
	if p := f.next(t); p.Kind != notify.KindSilent || p.Session.SilentSince == "" {
		t.Fatalf("got %+v", p)
	}
}

func TestWebhooksFollowTheRegistry(t *testing.T) {
	f := newFixture(t)
	if got := f.room.Webhooks(); len(got) != 1 {
		t.Fatalf("%d webhooks after Sync", len(got))
	}
	bad := raftstore.NotifyHook{ID: "wh-bad", Spec: []byte(`{"id":"wh-bad","url":"ftp://x","format":"json"}`)}
	f.mesh.mu.Lock()
	f.mesh.hooks = append(f.mesh.hooks, hook(t, "http://127.0.0.1:2/other"), bad)
	f.mesh.at = 2
	f.mesh.mu.Unlock()
	f.room.Sync()
	if got := f.room.Webhooks(); len(got) != 2 {
		t.Fatalf("%d webhooks, want the 2 valid ones", len(got))
	}
	if n := len(f.room.Stats().Webhooks); n != 2 {
		t.Fatalf("engine has %d webhooks", n)
	}
}

func TestDecodeHooksRefusesASpecUnderAnotherID(t *testing.T) {
	h := hook(t, "http://127.0.0.1:1/h")
	h.ID = "wh-00000000"
	hooks, err := DecodeHooks([]raftstore.NotifyHook{h})
	if len(hooks) != 0 || !errors.Is(err, ErrBadHook) {
		t.Fatalf("%v, %v", hooks, err)
	}
}

func TestChangedWakesWaiters(t *testing.T) {
	f := newFixture(t)
	ch := f.room.Changes()
	f.room.Changed()
	select {
	case <-ch:
	default:
		t.Fatal("Changes did not close on Changed")
	}
	var nilRoom *Room
	nilRoom.Changed() // a node without the room yet
}

func TestWaitForHolds(t *testing.T) {
	for _, c := range []struct {
		w     WaitFor
		s     presence.State
		holds bool
	}{
		{WaitNeedsInput, st("a", presence.ActivityNeedsInput, presence.TaskActive), true},
		{WaitNeedsInput, st("a", presence.ActivityWorking, presence.TaskActive), false},
		{WaitIdle, st("a", presence.ActivityIdle, presence.TaskActive), true},
		{WaitDone, st("a", presence.ActivityIdle, presence.TaskDone), true},
		{WaitBlocked, st("a", presence.ActivityIdle, presence.TaskBlocked), true},
		{WaitBlocked, st("a", presence.ActivityIdle, presence.TaskDone), false},
	} {
		if got := c.w.Holds(&c.s); got != c.holds {
			t.Errorf("%s on %s/%s: %v", c.w, c.s.Activity, c.s.TaskState, got)
		}
	}
	if _, err := ParseWaitFor("working"); !errors.Is(err, ErrWaitFor) {
		t.Fatalf("ParseWaitFor(working): %v", err)
	}
	if w, err := ParseWaitFor(" Needs_Input "); err != nil || w != WaitNeedsInput {
		t.Fatalf("ParseWaitFor: %v %v", w, err)
	}
	ended := st("a", presence.ActivityIdle, presence.TaskActive)
	ended.Ended = true
	if !WaitNeedsInput.Never(&ended) || WaitIdle.Never(&ended) {
		t.Fatal("Never")
	}
}

// TestWithoutALeaderTheAnnouncerTellsAnUnreachableNodeOnce: the server
// that announces while there is no leader tells a dead node's session
// once, however long the mesh stays leaderless.
func TestWithoutALeaderTheAnnouncerTellsAnUnreachableNodeOnce(t *testing.T) {
	f := newFixture(t)
	f.mesh.leading = true // no leader; this server is the first reachable one
	f.mesh.down = []Remote{{State: st("r1", presence.ActivityWorking, presence.TaskActive), Since: t0}}
	f.room.observe()
	f.clk.Advance(notify.DefaultDebounce)
	if p := f.next(t); p.Kind != notify.KindUnreachable || p.Session.ID != "r1" {
		t.Fatalf("got %+v", p)
	}
	for range 40 { // 20 minutes of looks, past the cooldown
		f.clk.Advance(30 * time.Second)
		f.room.observe()
	}
	if f.pending() != 0 || len(f.rec.got) != 0 {
		t.Fatalf("told again: %d timers armed, %d more messages", f.pending(), len(f.rec.got))
	}
}

// TestNewLeaderDoesNotRetellWhatTheLeaderlessAnnouncerTold: the leader b
// dies and the mesh stays leaderless for longer than a debounce window
// (another server announced b then); when this node is elected it does
// not tell b's sessions again. A leaderless stretch shorter than the
// window told nobody, and the new leader tells them.
func TestNewLeaderDoesNotRetellWhatTheLeaderlessAnnouncerTold(t *testing.T) {
	for _, c := range []struct {
		name     string
		stretch  time.Duration
		wantTold bool
	}{{"long", 30 * time.Second, false}, {"short", time.Second, true}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.mesh.leader = "b"
			f.room.observe() // a follower of b at t0
			gone := st("r1", presence.ActivityWorking, presence.TaskActive)
			gone.Node = "b"
			f.mesh.mu.Lock()
			f.mesh.leader, f.mesh.down = "", []Remote{{State: gone, Since: t0.Add(time.Second)}}
			f.mesh.mu.Unlock()
			f.clk.Advance(time.Second)
			f.room.observe() // leaderless, another server announces
			for step := time.Duration(0); step < c.stretch; step += time.Second {
				f.clk.Advance(time.Second)
				f.room.observe()
			}
			f.mesh.mu.Lock()
			f.mesh.leading, f.mesh.leader = true, "a"
			f.mesh.mu.Unlock()
			f.room.observe()
			f.clk.Advance(notify.DefaultDebounce)
			if !c.wantTold {
				if f.pending() != 0 || len(f.rec.got) != 0 {
					t.Fatalf("told again: %d timers, %d messages", f.pending(), len(f.rec.got))
				}
				return
			}
			if p := f.next(t); p.Kind != notify.KindUnreachable || p.Session.ID != "r1" {
				t.Fatalf("got %+v", p)
			}
		})
	}
}
