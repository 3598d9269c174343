package heartbeat

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

func newTest(t *testing.T, delay time.Duration) (*Projector, *clock.Fake, string) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Unix(1000, 0))
	return New(dir, slog.New(slog.NewTextHandler(io.Discard, nil)), delay, clk), clk, dir
}

func live(id string) presence.State {
	s := presence.NewState(id)
	s.Events = 1
	return s
}

func TestHeartbeatWaitsForTheProjectDelay(t *testing.T) {
	p, clk, dir := newTest(t, 20*time.Millisecond)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { p.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()
	p.Mark(live("s1"))
	if !clk.BlockUntil(1, 5*time.Second) {
		t.Fatal("the projector never armed its delay")
	}
	clk.Advance(19 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, FileName("s1"))); err == nil {
		t.Fatal("written before the delay passed")
	}
	clk.Advance(time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, FileName("s1"))); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("not written after the delay")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestResetRemovesHeartbeatsOfSessionsNotLive(t *testing.T) {
	p, _, dir := newTest(t, 0)
	stale := filepath.Join(dir, FileName("gone"))
	if err := os.WriteFile(stale, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Reset([]presence.State{live("s1")})
	if _, err := os.Stat(stale); err == nil {
		t.Fatal("a heartbeat of a session that is not live stayed")
	}
	fi, err := os.Stat(filepath.Join(dir, FileName("s1")))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("live heartbeat: %v %v", fi, err)
	}
	ended := live("s1")
	ended.Ended = true
	p.Mark(ended)
	p.Flush()
	if _, err := os.Stat(filepath.Join(dir, FileName("s1"))); err == nil {
		t.Fatal("an ended session's heartbeat stayed")
	}
}

func TestOnWriteIsToldAfterAFlushThatWrote(t *testing.T) {
	p, _, _ := newTest(t, 0)
	n := 0
	p.OnWrite(func() { n++ })
	p.Flush()
	if n != 0 {
		t.Fatalf("told %d times after a flush with nothing marked", n)
	}
	p.Mark(live("s1"))
	p.Mark(live("s2"))
	p.Flush()
	if n != 1 {
		t.Fatalf("told %d times after one flush of two sessions, want 1", n)
	}
	ended := live("s1")
	ended.Ended = true
	p.Mark(ended)
	p.Flush()
	if n != 2 {
		t.Fatalf("a removal was not told (%d)", n)
	}
}
