package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/harn-dev/harn/node/api"
)

// watchEntries is a roster of one session in each urgency class, given
// out of order: the asking one first by urgency, then the blocked one,
// the working one (silent for 20 minutes), the idle one.
func watchEntries() [][]byte {
	return [][]byte{
		entry("session_id", "5e55-idle-0001", "name", "Idle", "activity", "idle", "activity_updated_at", ago(time.Hour)),
		entry("session_id", "5e55-work-0002", "name", "Worker", "activity", "working", "activity_updated_at", ago(30*time.Minute),
			"last_evidence_at", ago(20*time.Minute)),
		entry("session_id", "5e55-block-003", "name", "Blocked", "task_state", "blocked", "blocker_reason", "needs repo access",
			"task_state_updated_at", ago(2*time.Minute)),
		entry("session_id", "5e55-ask-00004", "name", "Asker", "activity", "needs_input", "activity_updated_at", ago(3*time.Minute),
			"waiting_on", "Bash"),
	}
}

// testModel is a watch model at the tests' fixed time, 120 columns wide,
// that has read entries.
func testModel(t *testing.T, entries [][]byte) watchModel {
	t.Helper()
	m := newWatchModel(context.Background(), nil, time.Second, defaultSilenceAfter, false)
	m.now = func() time.Time { return now }
	next, _ := m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m = next.(watchModel)
	rows, err := decodeJSONRoster(entries, true, now, defaultSilenceAfter)
	if err != nil {
		t.Fatal(err)
	}
	next, cmd := m.Update(snapshotMsg{rows: rows, at: now})
	if cmd == nil {
		t.Fatal("a read must schedule the next one")
	}
	return next.(watchModel)
}

// TestWatchViewShowsRowsInUrgencyOrder: the live table shows the same
// rows as `agents list`, in urgency order, with the same handles and the
// silent marker.
func TestWatchViewShowsRowsInUrgencyOrder(t *testing.T) {
	m := testModel(t, watchEntries())
	view := m.View()
	var list bytes.Buffer
	if err := renderRoster(&list, roster(t, true, watchEntries()...), now, false, tableWidth); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimRight(list.String(), "\n"), "\n") {
		if !strings.Contains(view, l+"\n") {
			t.Errorf("the watch view lacks the list's line %q:\n%s", l, view)
		}
	}
	pos := func(s string) int {
		i := strings.Index(view, s)
		if i < 0 {
			t.Fatalf("no %q in\n%s", s, view)
		}
		return i
	}
	order := []int{pos("Asker"), pos("Blocked"), pos("Worker"), pos("Idle")}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Errorf("rows out of urgency order in\n%s", view)
		}
	}
	if !strings.Contains(line(t, view, "Worker"), "silent 20m") {
		t.Errorf("the working row lost its silent marker:\n%s", view)
	}
	if !strings.Contains(view, "4 sessions · 2 need you") {
		t.Errorf("title: %s", strings.SplitN(view, "\n", 2)[0])
	}
	if strings.Contains(view, "\x1b") {
		t.Errorf("colour off, yet escapes in the view: %q", view)
	}
}

// TestWatchQuitsOnQ: q, ctrl-c and esc quit the program.
func TestWatchQuitsOnQ(t *testing.T) {
	m := testModel(t, watchEntries())
	for _, k := range []tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune("q")}, {Type: tea.KeyCtrlC}, {Type: tea.KeyEsc}} {
		_, cmd := m.Update(k)
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s does not quit", k)
		}
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")})
	if cmd != nil {
		if _, ok := cmd().(tea.QuitMsg); ok {
			t.Error("x quits")
		}
	}
}

// TestWatchPollReadsTheNodeAgain: a poll tick runs a bounded read of the
// roster, which comes back as the next snapshot.
func TestWatchPollReadsTheNodeAgain(t *testing.T) {
	calls := 0
	fetch := func(ctx context.Context) ([]*api.SessionRow, *api.ReadInfo, error) {
		calls++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a read without a deadline")
		}
		return jsonRows(t, watchEntries()[:1]), &api.ReadInfo{Stale: true, LastContact: "9s"}, nil
	}
	m := newWatchModel(context.Background(), fetch, time.Second, defaultSilenceAfter, false)
	m.now = func() time.Time { return now }
	_, cmd := m.Update(pollMsg{})
	if cmd == nil {
		t.Fatal("a poll reads nothing")
	}
	snap, ok := cmd().(snapshotMsg)
	if !ok || calls != 1 || len(snap.rows) != 1 {
		t.Fatalf("read: %#v after %d calls", snap, calls)
	}
	next, _ := m.Update(snap)
	if v := next.View(); !strings.Contains(v, "stale read") || !strings.Contains(v, "Idle") {
		t.Errorf("view after the read:\n%s", v)
	}
}

// TestWatchKeepsRowsWhenAReadFails: a failed read keeps the last roster
// on screen and says why it is not fresh.
func TestWatchKeepsRowsWhenAReadFails(t *testing.T) {
	m := testModel(t, watchEntries())
	next, cmd := m.Update(snapshotMsg{at: now, err: errors.New("no harn node answers on /tmp/s\x1b[31m")})
	if cmd == nil {
		t.Fatal("a failed read must schedule a retry")
	}
	v := next.View()
	if !strings.Contains(v, "Asker") || !strings.Contains(v, "cannot read the roster: no harn node answers") {
		t.Errorf("view after a failed read:\n%s", v)
	}
	if strings.Contains(v, "\x1b") {
		t.Errorf("error text reached the screen raw: %q", v)
	}
}

// TestWatchViewSanitizesAgentText: what agents wrote reaches the screen
// only through util/text.
func TestWatchViewSanitizesAgentText(t *testing.T) {
	m := testModel(t, [][]byte{entry("session_id", "evil-0001", "name", "x\x1b]0;pwned\x07y", "task", "line\none\x1b[2J")})
	v := m.View()
	if strings.ContainsAny(v, "\x1b\x07\r") {
		t.Errorf("control bytes from agent text in the view: %q", v)
	}
}

// TestWatchScrollsLongRosters: a roster taller than the screen shows a
// page and says how many rows are hidden; down scrolls.
func TestWatchScrollsLongRosters(t *testing.T) {
	var es [][]byte
	for i := 0; i < 30; i++ {
		es = append(es, entry("session_id", "s-"+string(rune('a'+i%26))+string(rune('a'+i/26))+"-xxxxxx", "activity", "idle",
			"activity_updated_at", ago(time.Duration(i+1)*time.Minute)))
	}
	m := testModel(t, es)
	next, _ := m.Update(tea.WindowSizeMsg{Width: 100, Height: 13})
	m = next.(watchModel)
	v := m.View()
	if n := strings.Count(v, "\n") + 1; n > 13 {
		t.Errorf("view of %d lines on a 13-line screen:\n%s", n, v)
	}
	if !strings.Contains(v, "23 more rows") {
		t.Errorf("no hidden-row count:\n%s", v)
	}
	first := strings.Split(v, "\n")[2]
	// Down moves the selection; past the page's last row it scrolls.
	for range m.page() {
		next, _ = next.Update(tea.KeyMsg{Type: tea.KeyDown})
	}
	if second := strings.Split(next.View(), "\n")[2]; second == first {
		t.Errorf("down did not scroll: %q", second)
	}
}

// TestWatchJSONPrintsOnlyChanges: the first read prints every session;
// a read with nothing new prints nothing; a changed session prints one
// line; a session gone prints a removed line.
func TestWatchJSONPrintsOnlyChanges(t *testing.T) {
	var f changeFeed
	es := watchEntries()
	lines, err := f.changes(roster(t, false, es...))
	if err != nil || len(lines) != 4 {
		t.Fatalf("first read: %d lines, %v", len(lines), err)
	}
	var ids []string
	for _, l := range lines {
		var v struct {
			SessionID   string `json:"session_id"`
			SilentSince string `json:"silent_since"`
		}
		if err := json.Unmarshal(l, &v); err != nil || bytes.ContainsAny(l, "\n") {
			t.Fatalf("line %q: %v", l, err)
		}
		ids = append(ids, v.SessionID)
		if v.SessionID == "5e55-work-0002" && v.SilentSince == "" {
			t.Errorf("the silent session's line lacks silent_since: %s", l)
		}
	}
	if strings.Join(ids, " ") != "5e55-ask-00004 5e55-block-003 5e55-work-0002 5e55-idle-0001" {
		t.Errorf("first read order: %v", ids)
	}
	if lines, _ := f.changes(roster(t, false, es...)); len(lines) != 0 {
		t.Errorf("an unchanged roster printed %q", lines)
	}
	es[0] = entry("session_id", "5e55-idle-0001", "name", "Idle", "activity", "working", "activity_updated_at", ago(time.Second))
	lines, _ = f.changes(roster(t, false, es...))
	if len(lines) != 1 || !bytes.Contains(lines[0], []byte(`"activity":"working"`)) {
		t.Errorf("one change printed %q", lines)
	}
	lines, _ = f.changes(roster(t, false, es[:3]...))
	if len(lines) != 1 || string(lines[0]) != `{"session_id":"5e55-ask-00004","removed":true}` {
		t.Errorf("a removal printed %q", lines)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchJSONRetriesAFailedRead: watchJSON says a failed read once,
// keeps polling, prints when the node answers again and stops with its
// context.
func TestWatchJSONRetriesAFailedRead(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	fetch := func(ctx context.Context) ([]*api.SessionRow, *api.ReadInfo, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls <= 3 {
			return nil, nil, errors.New("no harn node answers")
		}
		return jsonRows(t, watchEntries()[:2]), nil, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- watchJSON(ctx, &out, &errOut, fetch, minWatchInterval, defaultSilenceAfter, listFilter{})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watchJSON did not stop with its context")
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Errorf("%d lines after recovery: %q", n, out.String())
	}
	if n := strings.Count(errOut.String(), "no harn node answers"); n != 1 {
		t.Errorf("the failure was said %d times: %q", n, errOut.String())
	}
}
