package hosted

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// fakeAgent is internal/testsupport/fakeagent, built once by TestMain.
var fakeAgent string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hosted-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fakeAgent = filepath.Join(dir, "fakeagent")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	out, err := exec.CommandContext(ctx, "go", "build", "-o", fakeAgent, "github.com/harn-dev/harn/internal/testsupport/fakeagent").CombinedOutput()
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build fakeagent: %v: %s\n", err, out)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sink keeps what the room records.
type sink struct {
	mu  sync.Mutex
	evs []presence.Event
	r   *Room // told of each event, as the node's subscribers are
}

func (s *sink) Ingest(evs []presence.Event) error {
	s.mu.Lock()
	s.evs = append(s.evs, evs...)
	r := s.r
	s.mu.Unlock()
	if r != nil {
		r.Observe(evs)
	}
	return nil
}

func (s *sink) of(session, typ string) []presence.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []presence.Event
	for _, e := range s.evs {
		if e.SessionID == session && e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// bound bounds every wait of these tests; it bounds, never measures.
const bound = 20 * time.Second

// eventually polls cond (every 10 ms, at most bound).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not within %v: %s", bound, what)
}

// newRoom opens a room on a temp state dir with the real clock, unless
// c is given.
func newRoom(t *testing.T, mod func(*Config)) (*Room, *sink) {
	t.Helper()
	sk := &sink{}
	cfg := DefaultConfig()
	cfg.Node, cfg.StateDir, cfg.Sink = "n1", filepath.Join(t.TempDir(), "hosted"), sk
	cfg.Environ = append(os.Environ(), "HARN_HTTP_TOKEN=s3cret", "OPENAI_API_KEY=k", "GITHUB_TOKEN=g", "PLAIN=kept")
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Digest = func(b []byte) string { return fmt.Sprintf("d%d", len(b)) }
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sk.r = r
	if err := r.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r, sk
}

// agentLog starts the fake agent (no hook) logging its input; it returns
// the session and the log's path.
func startFake(t *testing.T, r *Room, busy bool, extra ...string) (Info, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "input.log")
	argv := append([]string{fakeAgent, "--hook", "", "--log", log, "--turn", "1h"}, extra...)
	in, err := r.Start(Spec{Agent: "claude-code", Name: "fake", Argv: argv, Dir: t.TempDir(), By: "op@n1", Busy: busy,
		Interrupt: []byte{0x1b}, Submit: []byte{'\r'}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fake agent draws", func() bool {
		lines, _ := r.Screen(in.ID)
		return strings.Contains(strings.Join(lines, "\n"), "ready")
	})
	return in, log
}

func logHas(path string, want []byte) bool {
	b, _ := os.ReadFile(path)
	return bytes.Contains(b, want)
}

var _ = clock.Real{}
