package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	rt "github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/exec"
	"github.com/harn-dev/harn/util/clock"
)

// fakeNode records the TUI's task actions (the seam of these tests; the
// real node is in cli/e2e/chat*_test.go).
type fakeNode struct {
	mu    sync.Mutex
	acts  []taskwire.Action
	err   error
	rows  []*api.SessionRow
	hist  map[string]taskwire.Result
	start string // the session a start opens
}

func (f *fakeNode) Task(_ context.Context, _ string, a taskwire.Action) (taskwire.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a.Op != taskwire.OpHistory {
		f.acts = append(f.acts, a)
	}
	if f.err != nil {
		return taskwire.Result{}, f.err
	}
	if a.Op == taskwire.OpHistory {
		r := f.hist[a.Session]
		r.Node, r.Session = "n1", a.Session
		return r, nil
	}
	r := taskwire.Result{Node: "n1", Session: "h-01JAAAAAAA", Task: &rt.TaskView{ID: "t-01JBBBBBBB", Position: 1}}
	if a.Op == taskwire.OpStart {
		r.Session = f.start
	}
	if a.Op == taskwire.OpSteer {
		r.Steer = &exec.SteerResult{Mode: exec.SteerDelivered, Task: a.Task}
	}
	if a.Op == taskwire.OpPin || a.Op == taskwire.OpCompact {
		r.Task, r.Message = nil, a.Op+" done by the node"
	}
	return r, nil
}

func (f *fakeNode) Sessions(context.Context) ([]*api.SessionRow, error) { return f.rows, nil }

func (f *fakeNode) actions() []taskwire.Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]taskwire.Action(nil), f.acts...)
}

var t0 = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

func newTest(t testing.TB, f *fakeNode, session string) (*Model, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	cfg := DefaultConfig()
	cfg.Node, cfg.Session, cfg.Owner, cfg.Clock, cfg.Dir = f, session, "n1", clk, "/work/proj"
	cfg.Width, cfg.Height = 120, 40
	cfg.Start = &taskwire.Action{Op: taskwire.OpStart, Agent: taskwire.AgentHarn, Harn: &taskwire.HarnOptions{Model: "m1"}, Workdir: "/work/proj"}
	m, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, clk
}

func events(m *Model, evs ...taskwire.Event) {
	m.Update(historyMsg{gen: m.gen, r: taskwire.Result{Events: evs, Next: m.since + len(evs)}})
}

func jsonArgs(k, v string) string {
	b, _ := json.Marshal(map[string]string{k: v})
	return string(b)
}

func keyRunes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// press sends k and runs what it starts (an action's Cmd), once.
func press(m *Model, k tea.KeyMsg) {
	_, cmd := m.Update(k)
	run(m, cmd)
}

func run(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case actionMsg, pickerMsg:
		m.Update(msg)
	}
}

func typed(m *Model, s string, k tea.KeyMsg) {
	m.ta.SetValue(s)
	press(m, k)
}

// TestKeysSendTheirActionsAndSayWhichHappened: Enter steers the running
// task naming the turn it saw, Alt+Enter and Tab queue follow-ups, Esc
// cancels the running task, y answers a pending call; each says so on
// the status line, with short ids.
func TestKeysSendTheirActionsAndSayWhichHappened(t *testing.T) {
	f := &fakeNode{}
	m, _ := newTest(t, f, "h-01JAAAAAAA")
	events(m, taskwire.Event{Type: evTurnStart, Task: "t-01JCCCCCCC", Text: "go"})
	typed(m, "look left", tea.KeyMsg{Type: tea.KeyEnter})
	if !strings.Contains(m.status, "steered t-01JCCC: delivered") {
		t.Fatalf("enter: %q", m.status)
	}
	typed(m, "then A", tea.KeyMsg{Type: tea.KeyEnter, Alt: true})
	if !strings.Contains(m.status, "follow-up t-01JBBB queued (position 1)") {
		t.Fatalf("alt+enter: %q", m.status)
	}
	typed(m, "then B", tea.KeyMsg{Type: tea.KeyTab})
	typed(m, "", tea.KeyMsg{Type: tea.KeyEscape})
	if !strings.Contains(m.status, "aborted t-01JCCC") {
		t.Fatalf("esc: %q", m.status)
	}
	events(m, taskwire.Event{Type: evInputRequested, Task: "t-01JCCCCCCC", Call: "c9", Tool: "read", Args: `{"path":"a.go"}`})
	press(m, keyRunes("y"))
	if !strings.Contains(m.status, "approved read a.go") {
		t.Fatalf("y: %q", m.status)
	}
	want := []taskwire.Action{
		{Op: taskwire.OpSteer, Session: "h-01JAAAAAAA", Task: "t-01JCCCCCCC", Text: "look left"},
		{Op: taskwire.OpFollowUp, Session: "h-01JAAAAAAA", Text: "then A"},
		{Op: taskwire.OpFollowUp, Session: "h-01JAAAAAAA", Text: "then B"},
		{Op: taskwire.OpCancel, Task: "t-01JCCCCCCC", Reason: "Esc in the TUI"},
		{Op: taskwire.OpConfirm, Task: "t-01JCCCCCCC", Call: "c9", Reason: "answered in the TUI"},
	}
	acts := f.actions()
	for i := range acts {
		// a follow-up carries the TUI's harn options: an ended session opens again
		if (acts[i].Op == taskwire.OpFollowUp) != (acts[i].Harn != nil) {
			t.Fatalf("action %d: harn options %v", i, acts[i].Harn)
		}
		acts[i].Harn = nil
	}
	if fmt.Sprint(acts) != fmt.Sprint(want) {
		t.Fatalf("actions:\n%v\nwant\n%v", acts, want)
	}
}

// TestPendingShellShowsItsCommandCwdSessionAgentAndWaitBeforeY: the
// approval box of a pending shell call shows the whole command, its
// working directory, the session and task (short ids), the agent and how
// long it has waited, before any answer.
func TestPendingShellShowsItsCommandCwdSessionAgentAndWaitBeforeY(t *testing.T) {
	f := &fakeNode{}
	m, clk := newTest(t, f, "h-01JAAAAAAA")
	events(m, taskwire.Event{Type: evTurnStart, Task: "t-01JCCCCCCC", Text: "clean up"},
		taskwire.Event{Type: evInputRequested, Task: "t-01JCCCCCCC", Call: "c1", Tool: "shell", At: t0,
			Args: `{"command":"rm -rf build\ngo test ./..."}`})
	clk.Advance(75 * time.Second)
	s := m.View()
	for _, want := range []string{"approve shell?", "$ rm -rf build", "  go test ./...", "in /work/proj",
		"session h-01JAAA", "agent harn", "task t-01JCCC", "waiting 1m15s", "y approve", "n deny"} {
		if !strings.Contains(s, want) {
			t.Fatalf("the approval box lacks %q:\n%s", want, s)
		}
	}
	if len(f.actions()) != 0 {
		t.Fatalf("nothing is answered before y: %v", f.actions())
	}
}

// TestPendingEditShowsTheFileAndItsDiff: a pending write or edit shows
// the file and the diff the node computed, coloured lines aside.
func TestPendingEditShowsTheFileAndItsDiff(t *testing.T) {
	m, _ := newTest(t, &fakeNode{}, "h-01JAAAAAAA")
	events(m, taskwire.Event{Type: evTurnStart, Task: "t-1", Text: "fix"},
		taskwire.Event{Type: evInputRequested, Task: "t-1", Call: "c1", Tool: "edit",
			Args: `{"path":"main.go","old_string":"a","new_string":"b"}`,
			Diff: "--- a/main.go\n+++ b/main.go\n@@ -3,3 +3,3 @@\n x\n-a := 1\n+b := 1\n y\n"})
	s := m.View()
	for _, want := range []string{"approve edit?", "file main.go (in /work/proj)", "@@ -3,3 +3,3 @@", "-a := 1", "+b := 1"} {
		if !strings.Contains(s, want) {
			t.Fatalf("the approval box lacks %q:\n%s", want, s)
		}
	}
}

// TestToolCallShowsArgsAndABoundedOutputThatCtrlOExpands: a call's line
// names its arguments (a shell's command, a file tool's path); its output
// shows collapsedLines lines and how many more, ctrl+o shows them all.
func TestToolCallShowsArgsAndABoundedOutputThatCtrlOExpands(t *testing.T) {
	m, _ := newTest(t, &fakeNode{}, "h-01JAAAAAAA")
	var out []string
	for i := 1; i <= 20; i++ {
		out = append(out, fmt.Sprintf("out-line-%02d", i))
	}
	events(m, taskwire.Event{Type: evTurnStart, Task: "t-1", Text: "test"},
		taskwire.Event{Type: evToolPre, Task: "t-1", Call: "c1", Tool: "read", Args: `{"path":"docs/a.md"}`},
		taskwire.Event{Type: evToolPost, Task: "t-1", Call: "c1", Tool: "read", Outcome: "succeeded", Output: "# A"},
		taskwire.Event{Type: evToolPre, Task: "t-1", Call: "c2", Tool: "shell", Args: `{"command":"go test ./..."}`},
		taskwire.Event{Type: evToolPost, Task: "t-1", Call: "c2", Tool: "shell", Outcome: "failed", Output: strings.Join(out, "\n")})
	s := m.View()
	for _, want := range []string{"● read docs/a.md  ✓", "● shell $ go test ./...  ✗ failed", "out-line-08", "… 12 more lines"} {
		if !strings.Contains(s, want) {
			t.Fatalf("the screen lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "out-line-09") {
		t.Fatalf("the output is not collapsed:\n%s", s)
	}
	press(m, tea.KeyMsg{Type: tea.KeyCtrlO})
	m.vp.GotoBottom()
	if s := m.View(); !strings.Contains(s, "out-line-20") || strings.Contains(s, "more lines") {
		t.Fatalf("ctrl+o did not expand the last call:\n%s", s)
	}
}

// TestUntrustedTextIsStrippedOfControlCharacters: the model's text, a
// tool's name, arguments, diff and output, and prompts reach the screen
// without a control character (no colour here: styles add none).
func TestUntrustedTextIsStrippedOfControlCharacters(t *testing.T) {
	m, _ := newTest(t, &fakeNode{}, "h-01JAAAAAAA")
	bad := "\x1b[2J\x1b]0;title\x07\r\u009b31m"
	events(m, taskwire.Event{Type: evTurnStart, Task: "t-1", Text: "hi" + bad},
		taskwire.Event{Type: evText, Task: "t-1", Text: "one" + bad + " two\n\nthree\n"},
		taskwire.Event{Type: evInputRequested, Task: "t-1", Call: "c0", Tool: "shell", Args: jsonArgs("command", "ls "+bad)},
		taskwire.Event{Type: evToolPre, Task: "t-1", Call: "c1", Tool: "sh" + bad, Args: `{"x":"` + bad + `"}`, Diff: "-a" + bad},
		taskwire.Event{Type: evToolPost, Task: "t-1", Call: "c1", Tool: "sh" + bad, Outcome: "failed" + bad, Output: "o" + bad},
		taskwire.Event{Type: evToolRefused, Task: "t-1", Call: "c2", Tool: "x", Text: "no" + bad},
	)
	s := m.View()
	for _, l := range strings.Split(s, "\n") {
		for _, r := range l {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("control character %U in %q", r, l)
			}
		}
	}
	if !strings.Contains(s, "hi[2J]0;title31m") || !strings.Contains(s, "$ ls [2J") {
		t.Fatalf("the text around the escapes is gone:\n%s", s)
	}
}

// TestAFailedSendKeepsThePromptInTheInput: when the node refuses a send,
// the text stays in the input for another try; once taken, it goes.
func TestAFailedSendKeepsThePromptInTheInput(t *testing.T) {
	f := &fakeNode{err: errors.New("node unreachable")}
	m, _ := newTest(t, f, "h-01JAAAAAAA")
	typed(m, "a long prompt I typed", tea.KeyMsg{Type: tea.KeyEnter})
	if m.ta.Value() != "a long prompt I typed" || !strings.Contains(m.status, "node unreachable") {
		t.Fatalf("after a failed send: input %q, status %q", m.ta.Value(), m.status)
	}
	f.err = nil
	press(m, tea.KeyMsg{Type: tea.KeyEnter})
	if m.ta.Value() != "" {
		t.Fatalf("after the send: input %q", m.ta.Value())
	}
}

// TestNoModelHintRunsAsPrintedAndThePromptComesBack: with no model named,
// a prompt is kept and the hint says /model NAME; typed as printed, the
// prompt comes back and Enter starts the session with that model.
func TestNoModelHintRunsAsPrintedAndThePromptComesBack(t *testing.T) {
	f := &fakeNode{start: "h-01JNEWNEWN"}
	m, _ := newTest(t, f, "")
	m.model = ""
	typed(m, "first prompt", tea.KeyMsg{Type: tea.KeyEnter})
	if !strings.Contains(m.status, "type /model NAME") {
		t.Fatalf("the hint: %q", m.status)
	}
	typed(m, "/model m2", tea.KeyMsg{Type: tea.KeyEnter})
	if m.ta.Value() != "first prompt" {
		t.Fatalf("the prompt did not come back: %q (%s)", m.ta.Value(), m.status)
	}
	press(m, tea.KeyMsg{Type: tea.KeyEnter})
	acts := f.actions()
	if len(acts) != 1 || acts[0].Op != taskwire.OpStart || acts[0].Harn.Model != "m2" || acts[0].Text != "first prompt" {
		t.Fatalf("the start: %+v", acts)
	}
	if m.session != "h-01JNEWNEWN" {
		t.Fatalf("not attached to the new session: %q", m.session)
	}
}

// TestSlashCommands: /profile sets the next tasks' grants, an unknown one
// names /help (which opens the help), /compact and /pin send their ops to
// the session's owner and say what the node did, /new leaves the session.
func TestSlashCommands(t *testing.T) {
	f := &fakeNode{}
	m, _ := newTest(t, f, "h-01JAAAAAAA")
	typed(m, "/nope", tea.KeyMsg{Type: tea.KeyEnter})
	if m.status != "unknown command /nope: /help lists the commands" {
		t.Fatalf("unknown: %q", m.status)
	}
	typed(m, "/help", tea.KeyMsg{Type: tea.KeyEnter})
	if !m.helpOpen || !strings.Contains(m.View(), "/profile NAME") {
		t.Fatalf("/help:\n%s", m.View())
	}
	press(m, tea.KeyMsg{Type: tea.KeyEscape})
	typed(m, "/profile edit", tea.KeyMsg{Type: tea.KeyEnter})
	typed(m, "next task", tea.KeyMsg{Type: tea.KeyEnter})
	edit, _ := taskwire.Profile("edit")
	if acts := f.actions(); len(acts) != 1 || fmt.Sprint(acts[0].Grants) != fmt.Sprint(edit) {
		t.Fatalf("the follow-up after /profile edit: %+v", acts)
	}
	typed(m, "/profile bogus", tea.KeyMsg{Type: tea.KeyEnter})
	if !strings.Contains(m.status, "use read-only, confirm, edit or full") {
		t.Fatalf("bad profile: %q", m.status)
	}
	f.mu.Lock()
	f.acts = nil
	f.mu.Unlock()
	for _, c := range []string{"/compact", "/pin keep this"} {
		m.ta.SetValue(c)
		_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
		if cmd == nil {
			t.Fatalf("%s sent nothing: %q", c, m.status)
		}
		m.Update(cmd())
		if !strings.Contains(m.status, "done by the node") {
			t.Fatalf("%s: %q", c, m.status)
		}
	}
	want := []taskwire.Action{{Op: taskwire.OpCompact, Session: "h-01JAAAAAAA"}, {Op: taskwire.OpPin, Session: "h-01JAAAAAAA", Text: "keep this"}}
	if acts := f.actions(); fmt.Sprint(acts) != fmt.Sprint(want) {
		t.Fatalf("context ops: %v", acts)
	}
	typed(m, "/new", tea.KeyMsg{Type: tea.KeyEnter})
	if m.session != "" || !strings.Contains(m.View(), "no session yet") {
		t.Fatalf("/new: session %q", m.session)
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/quit")})
	_ = cmd
	m.ta.SetValue("/quit")
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter}); cmd == nil || fmt.Sprint(cmd()) != fmt.Sprint(tea.Quit()) {
		t.Fatal("/quit does not quit")
	}
}

// TestUpAndDownWalkThroughThisSessionsPrompts: Up on the input's first
// line brings back the session's earlier prompts and steers, newest
// first; Down walks back to the draft.
func TestUpAndDownWalkThroughThisSessionsPrompts(t *testing.T) {
	m, _ := newTest(t, &fakeNode{}, "h-01JAAAAAAA")
	events(m, taskwire.Event{Type: evTurnStart, Task: "t-1", Text: "first"},
		taskwire.Event{Type: evSteer, Task: "t-1", Text: "a steer", Status: steerDelivered, Step: 2},
		taskwire.Event{Type: evTurnEnd, Task: "t-1", Status: "succeeded"},
		taskwire.Event{Type: evTurnStart, Task: "t-2", Text: "second"})
	m.ta.SetValue("draft")
	var got []string
	for range 4 {
		press(m, tea.KeyMsg{Type: tea.KeyUp})
		got = append(got, m.ta.Value())
	}
	for range 3 {
		press(m, tea.KeyMsg{Type: tea.KeyDown})
		got = append(got, m.ta.Value())
	}
	want := "second|a steer|first|first|a steer|second|draft"
	if strings.Join(got, "|") != want {
		t.Fatalf("history: %s, want %s", strings.Join(got, "|"), want)
	}
}

// TestCtrlJIsANewLineAndEnterSendsTheWhole: Ctrl+J adds a line to the
// input; Enter sends both lines as one prompt.
func TestCtrlJIsANewLineAndEnterSendsTheWhole(t *testing.T) {
	f := &fakeNode{}
	m, _ := newTest(t, f, "h-01JAAAAAAA")
	for _, k := range []tea.KeyMsg{keyRunes("one"), {Type: tea.KeyCtrlJ}, keyRunes("two"), {Type: tea.KeyLeft}, keyRunes("X")} {
		press(m, k)
	}
	if m.ta.Value() != "one\ntwXo" {
		t.Fatalf("input %q", m.ta.Value())
	}
	press(m, tea.KeyMsg{Type: tea.KeyEnter})
	if acts := f.actions(); len(acts) != 1 || acts[0].Text != "one\ntwXo" {
		t.Fatalf("sent %+v", acts)
	}
}

// TestPgUpScrollsBackAndTheHeaderSaysSo: PgUp leaves the bottom (new
// lines no longer pull the view down), Ctrl+End comes back.
func TestPgUpScrollsBackAndTheHeaderSaysSo(t *testing.T) {
	m, _ := newTest(t, &fakeNode{}, "h-01JAAAAAAA")
	events(m, taskwire.Event{Type: evTurnStart, Task: "t-1", Text: "count"})
	for i := 0; i < 200; i++ {
		events(m, taskwire.Event{Type: evToolPre, Task: "t-1", Call: fmt.Sprint("c", i), Tool: "read", Args: fmt.Sprintf(`{"path":"f%03d.txt"}`, i)})
	}
	if s := m.View(); !strings.Contains(s, "f199.txt") {
		t.Fatalf("not at the bottom:\n%s", s)
	}
	press(m, tea.KeyMsg{Type: tea.KeyPgUp})
	press(m, tea.KeyMsg{Type: tea.KeyPgUp})
	events(m, taskwire.Event{Type: evToolPre, Task: "t-1", Call: "c-new", Tool: "read", Args: `{"path":"newest.txt"}`})
	s := m.View()
	if strings.Contains(s, "f199.txt") || strings.Contains(s, "newest.txt") || !strings.Contains(s, "scrolled") {
		t.Fatalf("PgUp did not scroll back, or new lines pulled it down:\n%s", s)
	}
	press(m, tea.KeyMsg{Type: tea.KeyCtrlEnd})
	if s := m.View(); !strings.Contains(s, "newest.txt") {
		t.Fatalf("ctrl+end:\n%s", s)
	}
}

// TestATurnWithRefusedCallsSaysSoAtItsEnd: a task that succeeded with
// calls the runtime refused says so on its end line.
func TestATurnWithRefusedCallsSaysSoAtItsEnd(t *testing.T) {
	f := &fakeNode{}
	m, _ := newTest(t, f, "h-01JAAAAAAA")
	events(m,
		taskwire.Event{Type: evTurnStart, Task: "t-01JCCCCCCC", Text: "create a hello file"},
		taskwire.Event{Type: evToolRefused, Task: "t-01JCCCCCCC", Call: "c1", Tool: "write", Text: "refused by the grant check"},
		taskwire.Event{Type: evTurnEnd, Task: "t-01JCCCCCCC", Status: "succeeded", Text: "I could not write it"})
	if v := m.View(); !strings.Contains(v, "succeeded · 1 call refused (write)") {
		t.Fatalf("the end line does not say the refusal:\n%s", v)
	}
	events(m,
		taskwire.Event{Type: evTurnStart, Task: "t-01JDDDDDDD", Text: "again"},
		taskwire.Event{Type: evTurnEnd, Task: "t-01JDDDDDDD", Status: "succeeded", Text: "done"})
	if v := m.View(); strings.Contains(v, "t-01JDDD succeeded ·") {
		t.Fatalf("a turn without refusals says one:\n%s", v)
	}
}

// TestAShortTaskIDGrowsWhenALaterTaskSharesItsPrefix: task ids are
// shown by their shortest unique prefix among those known; a task drawn
// before a later one that shares its prefix is drawn again with a longer
// one, so no id on screen is a prefix of another task's (a session's
// tasks started within minutes share the first characters of a ULID).
func TestAShortTaskIDGrowsWhenALaterTaskSharesItsPrefix(t *testing.T) {
	f := &fakeNode{}
	m, _ := newTest(t, f, "h-01JAAAAAAA")
	events(m,
		taskwire.Event{Type: evTurnStart, Task: "t-01M983D4AA", Text: "first"},
		taskwire.Event{Type: evTurnEnd, Task: "t-01M983D4AA", Status: "succeeded", Text: "one"})
	if v := m.View(); !strings.Contains(v, "── t-01M983 succeeded") {
		t.Fatalf("the first task alone is not shown by 8 characters:\n%s", v)
	}
	events(m,
		taskwire.Event{Type: evTurnStart, Task: "t-01M983DRBB", Text: "second"},
		taskwire.Event{Type: evTurnEnd, Task: "t-01M983DRBB", Status: "succeeded", Text: "two"})
	v := m.View()
	if strings.Contains(v, "t-01M983 ") || !strings.Contains(v, "── t-01M983D4 succeeded") || !strings.Contains(v, "── t-01M983DR succeeded") {
		t.Fatalf("an id on screen is a prefix of another task's:\n%s", v)
	}
}
