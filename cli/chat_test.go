package cli

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	rt "github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/exec"
)

// fakeChat records the TUI's task actions (a seam for the key tests; the
// real node is in cli/e2e/chat_test.go).
type fakeChat struct{ acts []taskwire.Action }

func (f *fakeChat) task(_ context.Context, _ string, a taskwire.Action) (taskwire.Result, error) {
	f.acts = append(f.acts, a)
	r := taskwire.Result{Node: "n1", Session: "h-1", Task: &rt.TaskView{ID: "t-2", Position: 1}}
	if a.Op == taskwire.OpSteer {
		r.Steer = &exec.SteerResult{Mode: exec.SteerDelivered, Task: a.Task}
	}
	return r, nil
}

func (f *fakeChat) children(context.Context, string) ([]*api.SessionRow, error) { return nil, nil }

func typed(m *chatModel, s string, k tea.KeyMsg) tea.Cmd {
	m.input = []rune(s)
	_, cmd := m.key(k)
	return cmd
}

// TestChatKeysSendTheirActionsAndSayWhichHappened: Enter steers the
// running task naming the turn it saw, Alt+Enter and Tab queue
// follow-ups, Esc cancels the running task, y answers a pending call;
// each says so on the action line.
func TestChatKeysSendTheirActionsAndSayWhichHappened(t *testing.T) {
	f := &fakeChat{}
	m := &chatModel{ctx: context.Background(), api: f, tr: newTranscript(), session: "h-1", owner: "n1", sent: map[string]string{}, width: 80, height: 24}
	m.tr.apply(taskwire.Event{Type: evTurnStart, Task: "t-1", Text: "go"})
	do := func(cmd tea.Cmd) string {
		t.Helper()
		if cmd == nil {
			t.Fatal("no action")
		}
		m.Update(cmd())
		return m.action
	}
	if s := do(typed(m, "look left", tea.KeyMsg{Type: tea.KeyEnter})); !strings.Contains(s, "steered t-1: delivered") {
		t.Fatalf("enter: %q", s)
	}
	if s := do(typed(m, "then A", tea.KeyMsg{Type: tea.KeyEnter, Alt: true})); !strings.Contains(s, "follow-up t-2 queued") {
		t.Fatalf("alt+enter: %q", s)
	}
	if s := do(typed(m, "then B", tea.KeyMsg{Type: tea.KeyTab})); !strings.Contains(s, "follow-up t-2 queued") {
		t.Fatalf("tab: %q", s)
	}
	if s := do(typed(m, "", tea.KeyMsg{Type: tea.KeyEscape})); !strings.Contains(s, "aborted t-1") {
		t.Fatalf("esc: %q", s)
	}
	m.tr.apply(taskwire.Event{Type: evInputRequested, Task: "t-1", Call: "c9", Tool: "shell"})
	if !strings.Contains(m.View(), "approve shell (c9) of t-1? y/n") {
		t.Fatalf("no approval line:\n%s", m.View())
	}
	if s := do(typed(m, "", tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'y'}})); !strings.Contains(s, "approved shell (c9)") {
		t.Fatalf("y: %q", s)
	}
	want := []taskwire.Action{
		{Op: taskwire.OpSteer, Session: "h-1", Task: "t-1", Text: "look left"},
		{Op: taskwire.OpFollowUp, Session: "h-1", Text: "then A"},
		{Op: taskwire.OpFollowUp, Session: "h-1", Text: "then B"},
		{Op: taskwire.OpCancel, Task: "t-1", Reason: "Esc in the TUI"},
		{Op: taskwire.OpConfirm, Task: "t-1", Call: "c9", Reason: "answered in the TUI"},
	}
	if fmt.Sprint(f.acts) != fmt.Sprint(want) {
		t.Fatalf("actions:\n%v\nwant\n%v", f.acts, want)
	}
}

// TestTranscriptStripsControlCharacters: model text, tool names and
// prompts reach the screen without a control character, and a tool's
// line follows its state.
func TestTranscriptStripsControlCharacters(t *testing.T) {
	tr := newTranscript()
	for _, e := range []taskwire.Event{
		{Type: evTurnStart, Task: "t-1", Text: "hi\x1b[2J"},
		{Type: evText, Task: "t-1", Text: "one\x1b]0;title\x07 two\nthree\r\u009b31m"},
		{Type: evToolPre, Task: "t-1", Call: "c\x1b1", Tool: "sh\x07ell"},
		{Type: evToolPost, Task: "t-1", Call: "c\x1b1", Tool: "sh\x07ell", Outcome: "succeeded"},
		{Type: evTurnEnd, Task: "t-1", Status: "succeeded", Text: "three"},
	} {
		tr.apply(e)
	}
	for _, l := range tr.tail(100) {
		for _, r := range l {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("control character %U in %q", r, l)
			}
		}
	}
	got := strings.Join(tr.tail(100), "\n")
	for _, want := range []string{"you> hi[2J", "  one]0;title two", "  three31m", "[tool] shell (c1): succeeded", "-- t-1 succeeded"} {
		if !strings.Contains(got, want) {
			t.Fatalf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Count(got, "[tool]") != 1 {
		t.Fatalf("a tool's state must rewrite its line:\n%s", got)
	}
}

// BenchmarkChatMemory10kLines: the TUI's heap for a 10,000-line session
// (what it keeps to paint), and the cost of one repaint.
func BenchmarkChatMemory10kLines(b *testing.B) {
	evs := []taskwire.Event{{Type: evTurnStart, Task: "t-1", Text: "write a lot"}}
	for i := 0; i < 10_000; i++ {
		evs = append(evs, taskwire.Event{Type: evText, Task: "t-1", Text: fmt.Sprintf("line %05d of the answer, about sixty characters of model text\n", i)})
	}
	evs = append(evs, taskwire.Event{Type: evTurnEnd, Task: "t-1", Status: "succeeded"})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := &chatModel{ctx: context.Background(), tr: newTranscript(), session: "h-1", owner: "n1", width: 160, height: 50, sent: map[string]string{}}
	m.absorb(taskwire.Result{Events: evs, Next: len(evs)})
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(evs) // the events are the node's; only the TUI's own state counts
	if n := m.tr.lineCount(); n < 10_000 {
		b.Fatalf("%d lines", n)
	}
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = m.View()
	}
	b.StopTimer()
	b.ReportMetric(heap/(1<<20), "MiB-heap")
	runtime.KeepAlive(m)
}

// TestChatQueueLineShowsEveryFollowUp: the queue line names every task
// the node queued for the session with its text, the ones queued
// elsewhere (harn task follow-up in another terminal) as well as this
// TUI's own, sanitized.
func TestChatQueueLineShowsEveryFollowUp(t *testing.T) {
	m := &chatModel{ctx: context.Background(), api: &fakeChat{}, tr: newTranscript(), session: "h-1", owner: "n1",
		sent: map[string]string{"t-4": "mine, typed here"}, width: 160, height: 24}
	m.absorb(taskwire.Result{Session: "h-1", View: &rt.SessionView{Session: "h-1", Task: &rt.TaskView{ID: "t-2"},
		Queue: []rt.TaskView{{ID: "t-3"}, {ID: "t-4"}, {ID: "t-5"}}},
		QueueText: []string{"from another \x1b[31mterminal", "mine, typed here"}})
	got := m.queueLine()
	for _, want := range []string{"queue: 3 waiting", "t-3 from another [31mterminal", "t-4 mine, typed here", "t-5"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the queue line %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Fatalf("a control character reached the queue line: %q", got)
	}
}
