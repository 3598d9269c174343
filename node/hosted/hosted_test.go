package hosted

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/procinfo"
)

// TestAHostedSessionIsOneRowFromItsStart: Start records session.start
// for its id at once, marked hosted, with its directory and process.
func TestAHostedSessionIsOneRowFromItsStart(t *testing.T) {
	r, sk := newRoom(t, nil)
	in, _ := startFake(t, r, false)
	if !strings.HasPrefix(in.ID, "hs-") || in.PID <= 0 {
		t.Fatalf("info %+v", in)
	}
	starts := sk.of(in.ID, presence.TypeSessionStart)
	if len(starts) != 1 || !starts[0].AttrBool(AttrHosted) || starts[0].AttrString(presence.AttrCwd) != in.Dir || agentProc(&starts[0]).PID != in.PID {
		t.Fatalf("start events %+v", starts)
	}
}

// TestSteerTypesTextAndCarriageReturn: a steer reaches the agent as its
// text followed by a carriage return, now, and is recorded with its
// digest, never its text.
func TestSteerTypesTextAndCarriageReturn(t *testing.T) {
	r, sk := newRoom(t, nil)
	in, log := startFake(t, r, true)
	res, err := r.Steer(in.ID, "look at the tests\nfirst", "op@n1")
	if err != nil || res.Mode != "typed" {
		t.Fatalf("steer: %+v %v", res, err)
	}
	eventually(t, "the agent reads the steer and Enter", func() bool { return logHas(log, []byte("look at the tests first\r")) })
	evs := sk.of(in.ID, TypeSteer)
	if len(evs) != 1 || evs[0].AttrString(presence.AttrBy) != "op@n1" || evs[0].AttrString(presence.AttrDigest) == "" {
		t.Fatalf("steer events %+v", evs)
	}
	for _, e := range evs {
		for _, v := range e.Attrs {
			if s, ok := v.(string); ok && strings.Contains(s, "look at") {
				t.Fatalf("the steer's text entered an event: %+v", e)
			}
		}
	}
}

// TestATypedTextCarriesNoKeys: control characters of a steer (an Esc
// that would interrupt the agent) are stripped before it is typed.
func TestATypedTextCarriesNoKeys(t *testing.T) {
	r, _ := newRoom(t, nil)
	in, log := startFake(t, r, true)
	if _, err := r.Steer(in.ID, "a\x1bb\x03c", "op"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "typed", func() bool { return logHas(log, []byte("abc\r")) })
	if logHas(log, []byte{0x1b}) || logHas(log, []byte{0x03}) {
		t.Fatal("a key from the steer's text reached the agent")
	}
}

// TestFollowUpIsHeldUntilTheTurnStops: a follow-up during a turn is not
// typed; the turn's stop types it; held ones go in order, one per stop.
func TestFollowUpIsHeldUntilTheTurnStops(t *testing.T) {
	r, sk := newRoom(t, nil)
	in, log := startFake(t, r, true)
	for i, txt := range []string{"first after", "second after"} {
		res, err := r.FollowUp(in.ID, txt, "op")
		if err != nil || res.Mode != "queued" || res.Queued != i+1 {
			t.Fatalf("follow-up %d: %+v %v", i, res, err)
		}
	}
	// A held follow-up is typed by Observe alone: nothing was written.
	if logHas(log, []byte("first after")) {
		t.Fatal("a follow-up was typed while the turn was open")
	}
	stop := presence.Event{SessionID: in.ID, Type: presence.TypeTurnStop, TS: time.Now()}
	sk.Ingest([]presence.Event{stop})
	eventually(t, "the first follow-up is typed at the stop", func() bool { return logHas(log, []byte("first after\r")) })
	if logHas(log, []byte("second after")) {
		t.Fatal("the second follow-up was typed at the first stop")
	}
	sk.Ingest([]presence.Event{stop})
	eventually(t, "the second at the next stop", func() bool { return logHas(log, []byte("second after\r")) })
	b, _ := os.ReadFile(log)
	if i, j := strings.Index(string(b), "first after"), strings.Index(string(b), "second after"); i < 0 || j < i {
		t.Fatalf("follow-ups out of order: %q", b)
	}
	eventually(t, "both recorded as sent", func() bool { return len(sk.of(in.ID, TypeFollowUpSent)) == 2 })
}

// TestFollowUpWithNoOpenTurnIsTypedAtOnce.
func TestFollowUpWithNoOpenTurnIsTypedAtOnce(t *testing.T) {
	r, _ := newRoom(t, nil)
	in, log := startFake(t, r, false)
	res, err := r.FollowUp(in.ID, "go on", "op")
	if err != nil || res.Mode != "typed" {
		t.Fatalf("%+v %v", res, err)
	}
	eventually(t, "typed", func() bool { return logHas(log, []byte("go on\r")) })
	// The turn it opened holds the next one.
	if res, err := r.FollowUp(in.ID, "then this", "op"); err != nil || res.Mode != "queued" {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestFollowUpsAreBounded: over MaxQueued held follow-ups, refused.
func TestFollowUpsAreBounded(t *testing.T) {
	r, _ := newRoom(t, nil)
	in, _ := startFake(t, r, true)
	for i := 0; i < MaxQueued; i++ {
		if _, err := r.FollowUp(in.ID, "x", "op"); err != nil {
			t.Fatalf("follow-up %d: %v", i, err)
		}
	}
	if _, err := r.FollowUp(in.ID, "one more", "op"); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("want ErrQueueFull, got %v", err)
	}
}

// TestInterruptSendsTheAgentsKey: Esc (0x1b) reaches the agent.
func TestInterruptSendsTheAgentsKey(t *testing.T) {
	r, sk := newRoom(t, nil)
	in, log := startFake(t, r, true)
	if _, err := r.Interrupt(in.ID, "op"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the agent reads Esc", func() bool { return logHas(log, []byte{0x1b}) })
	eventually(t, "the agent draws its interrupt", func() bool {
		l, _ := r.Screen(in.ID)
		return strings.Contains(strings.Join(l, "\n"), "Interrupted")
	})
	if len(sk.of(in.ID, TypeInterrupt)) != 1 {
		t.Fatal("the interrupt is not recorded")
	}
}

// TestStopEndsTheProcessAndTheSession: SIGTERM ends the agent; its
// session ends, saying who stopped it.
func TestStopEndsTheProcessAndTheSession(t *testing.T) {
	r, sk := newRoom(t, nil)
	in, _ := startFake(t, r, false)
	done := r.Wait(in.ID)
	if _, err := r.Stop(in.ID, "op@n1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatal("the agent did not end")
	}
	eventually(t, "the end is recorded", func() bool { return len(sk.of(in.ID, presence.TypeSessionEnd)) == 1 })
	if e := sk.of(in.ID, presence.TypeSessionEnd)[0]; !strings.Contains(e.AttrString(presence.AttrReason), "stopped by op@n1") {
		t.Fatalf("end reason %q", e.AttrString(presence.AttrReason))
	}
	if procinfo.Alive(procinfo.Proc{PID: in.PID}) || r.Has(in.ID) {
		t.Fatal("the stopped agent runs on")
	}
	if _, err := r.Steer(in.ID, "x", "op"); !errors.Is(err, ErrNoSession) {
		t.Fatalf("a steer of an ended session: %v", err)
	}
}

// TestStopKillsAfterTheGrace: an agent that ignores SIGTERM gets SIGKILL
// when the grace period has passed on the room's clock, not before.
func TestStopKillsAfterTheGrace(t *testing.T) {
	fake := clock.NewFake(time.Now())
	r, _ := newRoom(t, func(c *Config) { c.Clock, c.Grace = fake, time.Minute })
	in, err := r.Start(Spec{Agent: "shell", Name: "stubborn", Argv: []string{"/bin/sh", "-c", "trap '' TERM HUP; echo ready; while :; do sleep 1; done"},
		Dir: t.TempDir(), By: "op"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "ready", func() bool { l, _ := r.Screen(in.ID); return strings.Contains(strings.Join(l, ""), "ready") })
	if _, err := r.Stop(in.ID, "op"); err != nil {
		t.Fatal(err)
	}
	if !fake.BlockUntil(1, bound) {
		t.Fatal("no kill timer armed")
	}
	select {
	case <-r.Wait(in.ID):
		t.Fatal("the agent ended before its grace period")
	default:
	}
	fake.Advance(time.Minute)
	select {
	case <-r.Wait(in.ID):
	case <-time.After(bound):
		t.Fatal("SIGKILL did not end the agent after the grace period")
	}
}

// TestMaxHostedRefusesOverTheCap: the (Max+1)th live session is refused;
// the cap counts live ones only.
func TestMaxHostedRefusesOverTheCap(t *testing.T) {
	r, _ := newRoom(t, func(c *Config) { c.Max = 2 })
	a, _ := startFake(t, r, false)
	startFake(t, r, false)
	if _, err := r.Start(Spec{Agent: "x", Name: "x", Argv: []string{fakeAgent}, Dir: t.TempDir()}); !errors.Is(err, ErrTooMany) {
		t.Fatalf("a third session: want ErrTooMany, got %v", err)
	}
	r.Stop(a.ID, "op")
	<-r.Wait(a.ID)
	eventually(t, "room for one more", func() bool { return !r.Has(a.ID) })
	startFake(t, r, false)
}

// TestHostedProcessGetsAScrubbedEnvironment: no HARN_* variable of the
// node and nothing named like a secret; the room's own variables and the
// rest pass.
func TestHostedProcessGetsAScrubbedEnvironment(t *testing.T) {
	r, _ := newRoom(t, func(c *Config) { c.Env = []string{"HARN_SOCKET=/x/s"} })
	out := filepath.Join(t.TempDir(), "env")
	in, err := r.Start(Spec{Agent: "shell", Name: "env", Argv: []string{"/bin/sh", "-c", "env > " + out + "; sleep 30"}, Dir: t.TempDir(), DropEnv: []string{"PLAIN2"}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "env written", func() bool { b, _ := os.ReadFile(out); return strings.Contains(string(b), "PLAIN=") })
	b, _ := os.ReadFile(out)
	env := string(b)
	for _, bad := range []string{"HARN_HTTP_TOKEN", "OPENAI_API_KEY", "GITHUB_TOKEN"} {
		if strings.Contains(env, bad+"=") {
			t.Errorf("%s reached the hosted process", bad)
		}
	}
	for _, good := range []string{"PLAIN=kept", "HARN_SOCKET=/x/s", EnvHostedID + "=" + in.ID, "TERM="} {
		if !strings.Contains(env, good) {
			t.Errorf("%s missing from the hosted process's environment", good)
		}
	}
	if got := scrubEnv([]string{"A=1", "PLAIN2=x", "X_SECRET=y", "harn_x=1"}, []string{"PLAIN2"}); !slices.Equal(got, []string{"A=1"}) {
		t.Errorf("scrubEnv: %q", got)
	}
}

// TestCloseEndsEveryHostedProcess: the node's stop ends what it hosts and
// records each end.
func TestCloseEndsEveryHostedProcess(t *testing.T) {
	r, sk := newRoom(t, nil)
	in, _ := startFake(t, r, false)
	r.Close()
	if procinfo.Alive(procinfo.Proc{PID: in.PID}) {
		t.Fatal("a hosted process outlived the room's Close")
	}
	ends := sk.of(in.ID, presence.TypeSessionEnd)
	if len(ends) != 1 || !strings.Contains(ends[0].AttrString(presence.AttrReason), "node stopped") {
		t.Fatalf("ends %+v", ends)
	}
	if _, err := r.Start(Spec{Agent: "x", Name: "x", Argv: []string{fakeAgent}, Dir: t.TempDir()}); !errors.Is(err, ErrClosed) {
		t.Fatalf("a start after Close: %v", err)
	}
}

// TestOpenReapsSurvivorsOfAKilledNode: a process the previous run hosted
// that still runs is ended at the next Open, and every session that run
// hosted gets its end, saying so.
func TestOpenReapsSurvivorsOfAKilledNode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hosted")
	os.MkdirAll(dir, 0o700)
	cmd := exec.Command("/bin/sh", "-c", "sleep 60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	p, err := procinfo.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	state := `{"sessions":[{"id":"hs-survivor","agent":"claude-code","pid":` + itoa(p.PID) + `,"start":` + utoa(p.Start) + `},` +
		`{"id":"hs-gone","agent":"codex","pid":999999,"start":1}]}`
	os.WriteFile(filepath.Join(dir, "state.json"), []byte(state), 0o600)
	r, sk := newRoom(t, func(c *Config) { c.StateDir = dir })
	select {
	case <-waited:
	case <-time.After(bound):
		t.Fatal("the survivor runs on after Open")
	}
	if e := sk.of("hs-survivor", presence.TypeSessionEnd); len(e) != 1 || !strings.Contains(e[0].AttrString(presence.AttrReason), "ended at the start") {
		t.Fatalf("survivor's end %+v", e)
	}
	if e := sk.of("hs-gone", presence.TypeSessionEnd); len(e) != 1 || !strings.Contains(e[0].AttrString(presence.AttrReason), "node restarted") {
		t.Fatalf("gone one's end %+v", e)
	}
	st, _ := readState(dir)
	if len(st.Sessions) != 0 {
		t.Fatalf("the reaped sessions stay in the state: %+v", st.Sessions)
	}
	_ = r
}

func itoa(n int) string    { return strconv.Itoa(n) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }
