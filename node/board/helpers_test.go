package board

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// fakeSource is an in-memory Source: the seam the node implements.
type fakeSource struct {
	mu     sync.Mutex
	rows   []Row
	traces map[string][]presence.Event
	subs   map[int]chan struct{}
	next   int
	err    error
}

func newFake(rows ...Row) *fakeSource {
	return &fakeSource{rows: rows, traces: map[string][]presence.Event{}, subs: map[int]chan struct{}{}}
}

func (f *fakeSource) Roster(ctx context.Context) ([]Row, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return append([]Row(nil), f.rows...), nil
}

func (f *fakeSource) Session(ctx context.Context, h string) (Row, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var found []Row
	for _, r := range f.rows {
		if r.GetSessionId() == h {
			return r, nil
		}
		if strings.HasPrefix(r.GetSessionId(), h) {
			found = append(found, r)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	return Row{}, fmt.Errorf("session %q: %w", h, ErrNotFound)
}

func (f *fakeSource) Trace(ctx context.Context, h string) ([]presence.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.traces[h], nil
}

func (f *fakeSource) Changes() (<-chan struct{}, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	ch := make(chan struct{}, 1)
	f.subs[id] = ch
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if c, ok := f.subs[id]; ok {
			delete(f.subs, id)
			close(c)
		}
	}
}

// subscribers is the number of open subscriptions.
func (f *fakeSource) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// notify fires every subscription (without blocking, as a coalescing
// source does).
func (f *fakeSource) notify() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// kick ends every subscription, as a restarting node would.
func (f *fakeSource) kick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, c := range f.subs {
		delete(f.subs, id)
		close(c)
	}
}

// update replaces the row with r's id and notifies.
func (f *fakeSource) update(r Row) {
	f.mu.Lock()
	for i := range f.rows {
		if f.rows[i].GetSessionId() == r.GetSessionId() {
			f.rows[i] = r
		}
	}
	f.mu.Unlock()
	f.notify()
}

func (f *fakeSource) row(id string) Row {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rows {
		if r.GetSessionId() == id {
			// a copy: the caller changes it while the board reads the source
			r.SessionRow = proto.Clone(r.SessionRow).(*api.SessionRow)
			return r
		}
	}
	return Row{}
}

// fakeActions records calls and answers with a message or an error.
type fakeActions struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (a *fakeActions) do(kind string, r ActionRequest) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, kind+" "+r.SessionID+" "+r.TaskID+" "+r.RequestID+" "+r.Text)
	if a.err != nil {
		return "", a.err
	}
	return kind + " sent to " + r.SessionID, nil
}

func (a *fakeActions) Approve(_ context.Context, r ActionRequest) (string, error) {
	return a.do("approve", r)
}
func (a *fakeActions) Deny(_ context.Context, r ActionRequest) (string, error) {
	return a.do("deny", r)
}
func (a *fakeActions) Steer(_ context.Context, r ActionRequest) (string, error) {
	return a.do("steer", r)
}
func (a *fakeActions) FollowUp(_ context.Context, r ActionRequest) (string, error) {
	return a.do("follow_up", r)
}
func (a *fakeActions) Cancel(_ context.Context, r ActionRequest) (string, error) {
	return a.do("cancel", r)
}

func (a *fakeActions) log() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

// t0 is the tests' fixed now.
var t0 = time.Date(2026, 8, 12, 10, 30, 0, 0, time.UTC)

// fakeClock is the fake clock a test server runs on (newTestServer's,
// unless the test gave its own).
func fakeClock(t *testing.T, s *Server) *clock.Fake {
	t.Helper()
	f, ok := s.cfg.Clock.(*clock.Fake)
	if !ok {
		t.Fatalf("the server runs on %T, not a fake clock", s.cfg.Clock)
	}
	return f
}

// seed is a roster across three machines: one needs input, one blocked,
// one working and silent, one idle and done, one on an unreachable
// machine, one ended, one with a harn task.
func seed() []Row {
	m := func(d time.Duration) time.Time { return t0.Add(-d) }
	return []Row{
		{SessionRow: &api.SessionRow{SessionId: "s-idle", Name: "ivy", Agent: "codex", Node: "alpha", Task: "tidy the docs",
			Activity: "idle", ActivityUpdatedAtUnixNano: ns(m(20 * time.Minute)), TaskState: "done", TaskStateUpdatedAtUnixNano: ns(m(19 * time.Minute)),
			Reachable: true, Project: "harn", Branch: "docs"}},
		{SessionRow: &api.SessionRow{SessionId: "s-work", Name: "wren", Agent: "claude-code", Node: "alpha", Task: "write the board",
			Activity: "working", ActivityUpdatedAtUnixNano: ns(m(9 * time.Minute)), TaskState: "active", SilentSinceUnixNano: ns(m(7 * time.Minute)),
			Reachable: true, LastEvidenceAtUnixNano: ns(m(7 * time.Minute)), Claims: []string{"node/board/**"}}},
		{SessionRow: &api.SessionRow{SessionId: "s-need", Name: "nell", Agent: "codex", Node: "beta", Task: "migrate the ledger",
			Activity: "needs_input", ActivityUpdatedAtUnixNano: ns(m(3 * time.Minute)), ActivitySource: "interaction.input_requested",
			TaskState: "active", Reachable: true},
			PendingRequests: []Request{{ID: "req-1", Kind: "permission", Summary: "Bash: runs rm …",
				Tool: "Bash", Detail: "rm -rf build && make release VERSION=<1.2>", Cwd: "/src/harn", Handle: "nell",
				Place: "harn@main", Opened: m(2 * time.Minute)}}},
		{SessionRow: &api.SessionRow{SessionId: "s-block", Name: "bo", Agent: "cursor", Node: "beta", Task: "ship the release",
			Activity: "idle", ActivityUpdatedAtUnixNano: ns(m(30 * time.Minute)), TaskState: "blocked", TaskStateUpdatedAtUnixNano: ns(m(25 * time.Minute)),
			BlockerReason: "waiting for repository access", Reachable: true}},
		{SessionRow: &api.SessionRow{SessionId: "s-task", Name: "tao", Agent: "harn", Node: "beta", Task: "refactor the spool",
			Activity: "working", ActivityUpdatedAtUnixNano: ns(m(1 * time.Minute)), TaskState: "active", Reachable: true,
			HarnTask: &api.HarnTask{Id: "t-42", State: "running"}}},
		{SessionRow: &api.SessionRow{SessionId: "s-gone", Name: "gus", Agent: "gemini", Node: "gamma", Task: "profile the raft log",
			Activity: "working", ActivityUpdatedAtUnixNano: ns(m(50 * time.Minute)), TaskState: "active",
			Reachable: false, UnreachableSinceUnixNano: ns(m(12 * time.Minute))}},
		{SessionRow: &api.SessionRow{SessionId: "s-ended", Name: "eve", Agent: "claude-code", Node: "alpha", Task: "fix the flaky test",
			Activity: "idle", ActivityUpdatedAtUnixNano: ns(m(2 * time.Hour)), TaskState: "done", TaskStateUpdatedAtUnixNano: ns(m(2 * time.Hour)),
			SuggestedSessionName: "[DONE] - Agent eve - fix the flaky test", Ended: true, EndedAtUnixNano: ns(m(90 * time.Minute)),
			EndReason: "session.end", Reachable: true, Claims: []string{"presence/fold.go"}}}}
}

func seedTrace() []presence.Event {
	return []presence.Event{
		{ID: "e1", SessionID: "s-ended", Type: "session.start", TS: t0.Add(-3 * time.Hour), Seq: 1},
		{ID: "e2", SessionID: "s-ended", Type: "state.task_state", TS: t0.Add(-2 * time.Hour), Seq: 2,
			Attrs: map[string]any{"task_state": "done"}},
		{ID: "e3", SessionID: "s-ended", Type: "session.end", TS: t0.Add(-90 * time.Minute), Seq: 3},
	}
}

// newTestServer is a board over the seed on a fake clock set to t0.
func newTestServer(t *testing.T, mod func(*Config)) (*Server, *fakeSource, *fakeActions) {
	t.Helper()
	src := newFake(seed()...)
	src.traces["s-ended"] = seedTrace()
	acts := &fakeActions{}
	cfg := Config{Addr: "127.0.0.1:0", Token: secret, Source: src, Actions: acts, Clock: clock.NewFake(t0)}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, src, acts
}
