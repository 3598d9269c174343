package tui

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	rt "github.com/harn-dev/harn/runtime"
)

// TestShortIDsAreTheShortestUniquePrefix: an id shows as its shortest
// prefix that no other known id shares, never under minShort.
func TestShortIDsAreTheShortestUniquePrefix(t *testing.T) {
	s := newShortIDs()
	s.learn("h-01JABCDEF1", "h-01JABCDXYZ", "h-01KZZZZZZZ")
	for id, want := range map[string]string{"h-01JABCDEF1": "h-01JABCDE", "h-01JABCDXYZ": "h-01JABCDX", "h-01KZZZZZZZ": "h-01KZZZ"} {
		if got := s.short(id); got != want {
			t.Fatalf("short(%s) = %s, want %s", id, got, want)
		}
	}
	s.learn("h-01KZZZZ999")
	if got := s.short("h-01KZZZZZZZ"); got != "h-01KZZZZZ" {
		t.Fatalf("after a new id sharing its prefix: %s", got)
	}
}

// TestAnswerIsDrawnAsMarkdownCompletedBlocksWhileStreaming: the answer is
// drawn as markdown (no ** nor list dashes left); while it streams only
// its completed blocks are, the rest as it came.
func TestAnswerIsDrawnAsMarkdownCompletedBlocksWhileStreaming(t *testing.T) {
	m, _ := newTest(t, &fakeNode{}, "h-01JAAAAAAA")
	events(m, taskwire.Event{Type: evTurnStart, Task: "t-1", Text: "explain"},
		taskwire.Event{Type: evText, Task: "t-1", Text: "Some **bold** words.\n\nThen **half"})
	s := ansi.Strip(m.View())
	if strings.Contains(s, "**bold**") || !strings.Contains(s, "bold words.") || !strings.Contains(s, "Then **half") {
		t.Fatalf("streaming: the completed block as markdown, the rest as it came:\n%s", s)
	}
	events(m, taskwire.Event{Type: evText, Task: "t-1", Text: " done**\n\n```go\nx := 1\n\n```\n- item\n"},
		taskwire.Event{Type: evTurnEnd, Task: "t-1", Status: "succeeded"})
	s = ansi.Strip(m.View())
	if strings.Contains(s, "**") || strings.Contains(s, "```") || !strings.Contains(s, "x := 1") || !strings.Contains(s, "• item") {
		t.Fatalf("the whole answer as markdown:\n%s", s)
	}
	if done, rest := completeBlocks("a\n\n```\nb\n\nc"); done != "a\n\n" || rest != "```\nb\n\nc" {
		t.Fatalf("a blank line inside an open fence is no block's end: %q %q", done, rest)
	}
}

// TestPromptOfAnotherRoomAsksYNBeforeTheApprovals: a Prompt (the seam of
// a directory's trust question) shows its lines, takes y or n before a
// pending call's box, and its Answer gets the answer.
func TestPromptOfAnotherRoomAsksYNBeforeTheApprovals(t *testing.T) {
	f := &fakeNode{}
	m, _ := newTest(t, f, "h-01JAAAAAAA")
	events(m, taskwire.Event{Type: evTurnStart, Task: "t-1", Text: "x"},
		taskwire.Event{Type: evInputRequested, Task: "t-1", Call: "c1", Tool: "shell", Args: `{"command":"ls"}`})
	var got []bool
	m.Update(promptMsg{p: Prompt{Title: "trust this directory's MCP servers?", Lines: []string{"github: npx gh-mcp", "db: ./db\x1b[31m-mcp"},
		Answer: func(yes bool) tea.Cmd { got = append(got, yes); return nil }}})
	s := m.View()
	if !strings.Contains(s, "trust this directory's MCP servers?") || !strings.Contains(s, "db: ./db[31m-mcp") || strings.Contains(s, "approve shell?") {
		t.Fatalf("the prompt's box:\n%s", s)
	}
	press(m, keyRunes("n"))
	if fmt.Sprint(got) != "[false]" || len(f.actions()) != 0 {
		t.Fatalf("n went to %v, actions %v", got, f.actions())
	}
	if s := m.View(); !strings.Contains(s, "approve shell?") {
		t.Fatalf("after the prompt, the approval:\n%s", s)
	}
}

// TestPickerListsThisDirectorysSessionsNewestFirstAndOpensOne: the
// picker lists the directory's harn sessions (not children, not other
// directories') newest first with their first prompt and age; Enter
// opens the one chosen with its history; n starts a new one.
func TestPickerListsThisDirectorysSessionsNewestFirstAndOpensOne(t *testing.T) {
	rows := []*api.SessionRow{
		{SessionId: "h-01JOLDOLDO", Agent: "harn", Cwd: "/work/proj", LastEventAtUnixNano: t0.Add(-3 * 3600e9).UnixNano(), Ended: true},
		{SessionId: "h-01JNEWNEWN", Agent: "harn", Cwd: "/work/proj", LastEventAtUnixNano: t0.Add(-120e9).UnixNano()},
		{SessionId: "h-01JKIDKIDK", Agent: "harn", Cwd: "/work/proj", ParentSessionId: "h-01JNEWNEWN", LastEventAtUnixNano: t0.UnixNano()},
		{SessionId: "h-01JELSEWHE", Agent: "harn", Cwd: "/elsewhere", LastEventAtUnixNano: t0.UnixNano()},
		{SessionId: "s-claude", Agent: "claude-code", Cwd: "/work/proj"},
	}
	f := &fakeNode{rows: rows, hist: map[string]taskwire.Result{
		"h-01JOLDOLDO": {Events: []taskwire.Event{{Type: evTurnStart, Task: "t-1", Text: "the old question"}, {Type: evText, Task: "t-1", Text: "old answer"}}},
		"h-01JNEWNEWN": {Events: []taskwire.Event{{Type: evTurnStart, Task: "t-2", Text: "the new question"}}},
	}}
	m, _ := newTest(t, f, "")
	m.picker = newPicker(SessionsOf(rows, "/work/proj"), t0)
	m.Update(m.firsts(m.picker.rows)())
	s := m.View()
	iNew, iOld := strings.Index(s, "the new question"), strings.Index(s, "the old question")
	if iNew < 0 || iOld < 0 || iNew > iOld || !strings.Contains(s, "2m live") || !strings.Contains(s, "3h ended") || !strings.Contains(s, "+ new session") {
		t.Fatalf("the picker:\n%s", s)
	}
	if strings.Contains(s, "KID") || strings.Contains(s, "ELSEWHE") || strings.Contains(s, "claude") {
		t.Fatalf("the picker lists another directory's, a child or another agent's session:\n%s", s)
	}
	press(m, tea.KeyMsg{Type: tea.KeyDown})
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	m.Update(cmd())
	if m.picker != nil || m.session != "h-01JOLDOLDO" || !strings.Contains(m.View(), "old answer") {
		t.Fatalf("Enter on the second row: session %q\n%s", m.session, m.View())
	}
	typed(m, "/sessions", tea.KeyMsg{Type: tea.KeyEnter})
	if m.picker == nil {
		t.Fatal("/sessions did not open the picker")
	}
	press(m, keyRunes("n"))
	if m.picker != nil || m.session != "" {
		t.Fatalf("n: picker %v session %q", m.picker, m.session)
	}
}

// TestQueueLineShowsEveryFollowUp: the queue line names every task the
// node queued for the session with its text, the ones queued elsewhere
// as well as this TUI's own, sanitized.
func TestQueueLineShowsEveryFollowUp(t *testing.T) {
	m, _ := newTest(t, &fakeNode{}, "h-01JAAAAAAA")
	m.sent["t-4"] = "mine, typed here"
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
	m, _ := newTest(b, &fakeNode{}, "h-01JAAAAAAA")
	m.cfg.Width, m.cfg.Height = 160, 50
	m.resize(160, 50)
	m.Update(historyMsg{gen: m.gen, r: taskwire.Result{Events: evs, Next: len(evs)}})
	_ = m.View()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(evs) // the events are the node's; only the TUI's own state counts
	if n := m.vp.TotalLineCount(); n < 10_000 {
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
