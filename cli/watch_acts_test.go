package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// fakeActor records the actions of a watch (a unit test of the seam;
// the e2e tmux test drives the real node).
type fakeActor struct {
	reqs    []*api.PermissionRequest
	answers []string
	actions []taskwire.Action
	refuse  error
}

func (f *fakeActor) pending(context.Context) ([]*api.PermissionRequest, error) { return f.reqs, nil }
func (f *fakeActor) answer(_ context.Context, id string, allow bool) (string, error) {
	if f.refuse != nil {
		return "", f.refuse
	}
	if allow {
		f.answers = append(f.answers, "allow "+id)
	} else {
		f.answers = append(f.answers, "deny "+id)
	}
	return "answered " + id, nil
}
func (f *fakeActor) task(_ context.Context, a taskwire.Action) (string, error) {
	if f.refuse != nil {
		return "", f.refuse
	}
	f.actions = append(f.actions, a)
	return "task done", nil
}

// press sends keys to m and runs each command it returns (one level).
func press(t *testing.T, m watchModel, keys ...tea.KeyMsg) watchModel {
	t.Helper()
	for _, k := range keys {
		next, cmd := m.Update(k)
		m = next.(watchModel)
		if cmd != nil {
			if msg := cmd(); msg != nil {
				next, _ = m.Update(msg)
				m = next.(watchModel)
			}
		}
	}
	return m
}

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// TestWatchApproveAsksWithTheRequestFactsThenAnswers: `a` on the asking
// row finds its open request, asks y/n with the tool and the summary,
// and y answers it; the status bar shows the result.
func TestWatchApproveAsksWithTheRequestFactsThenAnswers(t *testing.T) {
	m := testModel(t, watchEntries())
	f := &fakeActor{reqs: []*api.PermissionRequest{{Id: "r1", Session: "5e55-ask-00004", Node: "n", Tool: "Bash", Summary: "runs make\x1b[2J test"}}}
	m.act = f
	if r := m.selected(); r == nil || r.SessionId != "5e55-ask-00004" {
		t.Fatalf("the first (most urgent) row must be selected: %+v", r)
	}
	m = press(t, m, runes("a"))
	v := m.View()
	if m.mode != modeConfirm || !strings.Contains(v, "approve Bash: runs make") || !strings.Contains(v, "y/n") {
		t.Fatalf("no confirmation:\n%s", v)
	}
	if strings.Contains(v, "\x1b[2J") {
		t.Fatalf("agent text reached the terminal unsanitized: %q", v)
	}
	m = press(t, m, runes("y"))
	if len(f.answers) != 1 || f.answers[0] != "allow r1" || !strings.Contains(m.View(), "answered r1") {
		t.Fatalf("answers %v, view:\n%s", f.answers, m.View())
	}
	// n drops a confirmation unsent.
	m = press(t, m, runes("d"), runes("n"))
	if len(f.answers) != 1 || !strings.Contains(m.View(), "not sent") {
		t.Fatalf("n must not send: %v", f.answers)
	}
}

// TestWatchRefusalShowsInTheStatusBar: a refused action is one line in
// the status bar, and a row without a request says why.
func TestWatchRefusalShowsInTheStatusBar(t *testing.T) {
	m := testModel(t, watchEntries())
	f := &fakeActor{refuse: errors.New("remote control is off on node n")}
	m.act = f
	m = press(t, m, runes("s"), runes("go on"), tea.KeyMsg{Type: tea.KeyEnter})
	if v := m.View(); !strings.Contains(v, "refused: remote control is off on node n") {
		t.Fatalf("no refusal:\n%s", v)
	}
	m = press(t, m, tea.KeyMsg{Type: tea.KeyDown}, runes("a"))
	if v := m.View(); !strings.Contains(v, "has no open permission request") {
		t.Fatalf("no reason for a missing request:\n%s", v)
	}
}

// TestWatchSteerSendsTheTypedLineAndDetailOpensAndCloses: s takes a
// line and Enter sends it as a steer of the selected session; Enter opens
// the show view and Esc goes back to the table.
func TestWatchSteerSendsTheTypedLineAndDetailOpensAndCloses(t *testing.T) {
	m := testModel(t, watchEntries())
	f := &fakeActor{}
	m.act = f
	m = press(t, m, runes("s"), runes("use"), tea.KeyMsg{Type: tea.KeySpace}, runes("the cache"), tea.KeyMsg{Type: tea.KeyEnter})
	if len(f.actions) != 1 || f.actions[0].Op != taskwire.OpSteer || f.actions[0].Session != "5e55-ask-00004" || f.actions[0].Text != "use the cache" {
		t.Fatalf("actions: %+v", f.actions)
	}
	m = press(t, m, tea.KeyMsg{Type: tea.KeyEnter})
	if v := m.View(); m.mode != modeDetail || !strings.Contains(v, "activity:") || !strings.Contains(v, "esc back") {
		t.Fatalf("no detail:\n%s", v)
	}
	m = press(t, m, tea.KeyMsg{Type: tea.KeyEsc})
	if v := m.View(); m.mode != modeTable || !strings.Contains(v, "SESSION") {
		t.Fatalf("esc must go back to the table:\n%s", v)
	}
	// c on a row with no harn task is refused without a call.
	m = press(t, m, runes("c"))
	if v := m.View(); !strings.Contains(v, "runs no harn task") || len(f.actions) != 1 {
		t.Fatalf("cancel without a task:\n%s", v)
	}
}

// TestWatchApprovalShowsTheWholeCommandWrapped: the approval shows the
// call's whole command, wrapped at the screen's width (never cut to its
// program: `git push --force-with-lease` stays visible), its cwd, session,
// agent and wait, with control characters stripped.
func TestWatchApprovalShowsTheWholeCommandWrapped(t *testing.T) {
	m := testModel(t, watchEntries())
	next, _ := m.Update(tea.WindowSizeMsg{Width: 40, Height: 40})
	m = next.(watchModel)
	cmd := "cd /srv/app && make release VERSION=1.2.3 \x1b]0;pwned\x07&& git push --force-with-lease origin main"
	f := &fakeActor{reqs: []*api.PermissionRequest{{Id: "r1", Kind: "permission", Session: "5e55-ask-00004", Node: "n", Agent: "claude-code",
		Tool: "Bash", Summary: "Bash: runs cd …", Command: cmd, Cwd: "/srv/app", Opened: api.NewTime(now.Add(-90 * time.Second))}}}
	m.act = f
	m = press(t, m, runes("a"))
	v := m.View()
	if strings.ContainsAny(v, "\x1b\x07") {
		t.Fatalf("control characters reached the terminal: %q", v)
	}
	joined := strings.Join(strings.Fields(v), "")
	for _, want := range []string{"cd/srv/app&&makereleaseVERSION=1.2.3]0;pwned&&gitpush--force-with-leaseoriginmain",
		"in/srv/app", "agentclaude-code", "waiting1m", "approveBash(requestr1)?y/n"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("the approval lacks %q:\n%s", want, v)
		}
	}
	for _, l := range strings.Split(v, "\n") {
		if w := lipgloss.Width(l); w > 40 {
			t.Fatalf("a row is %d cells on a 40-cell screen: %q", w, l)
		}
	}
}

// TestWatchScrollsAnApprovalTallerThanTheScreen: facts taller than the
// screen say which lines show, and ↓ shows the next ones.
func TestWatchScrollsAnApprovalTallerThanTheScreen(t *testing.T) {
	m := testModel(t, watchEntries())
	next, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 12})
	m = next.(watchModel)
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("echo step-%02d", i))
	}
	m.act = &fakeActor{reqs: []*api.PermissionRequest{{Id: "r1", Session: "5e55-ask-00004", Node: "n", Tool: "Bash",
		Command: strings.Join(lines, "\n") + "\ngit push --force-with-lease"}}}
	m = press(t, m, runes("a"))
	v := m.View()
	if !strings.Contains(v, "lines 1-6 of 33 (↑/↓ scroll)") || strings.Contains(v, "step-29") {
		t.Fatalf("the first window:\n%s", v)
	}
	for range 40 {
		m = press(t, m, tea.KeyMsg{Type: tea.KeyDown})
	}
	if v := m.View(); !strings.Contains(v, "git push --force-with-lease") || !strings.Contains(v, "lines 28-33 of 33") {
		t.Fatalf("scrolled to the end:\n%s", v)
	}
}

// TestWatchAnswersAHarnConfirmationThroughItsTask: `a` on a harn
// session's row finds its call that waits for a confirmation, shows its
// command, and y confirms it as `harn task confirm TASK CALL` does.
func TestWatchAnswersAHarnConfirmationThroughItsTask(t *testing.T) {
	m := testModel(t, watchEntries())
	f := &fakeActor{reqs: []*api.PermissionRequest{{Id: "call-1", Kind: "confirmation", Task: "t-7", Call: "call-1",
		Session: "5e55-ask-00004", Node: "n", Agent: "harn", Tool: "shell", Command: "git push --force-with-lease", Cwd: "/w"}}}
	m.act = f
	m = press(t, m, runes("a"))
	if v := m.View(); !strings.Contains(v, "$ git push --force-with-lease") || !strings.Contains(v, "approve shell (call call-1 of task t-7)? y/n") {
		t.Fatalf("the confirmation:\n%s", v)
	}
	m = press(t, m, runes("y"))
	if len(f.actions) != 1 || f.actions[0].Op != taskwire.OpConfirm || f.actions[0].Task != "t-7" || f.actions[0].Call != "call-1" || len(f.answers) != 0 {
		t.Fatalf("actions %+v answers %v", f.actions, f.answers)
	}
	m = press(t, m, runes("d"), runes("y"))
	if len(f.actions) != 2 || f.actions[1].Op != taskwire.OpDeny {
		t.Fatalf("deny: %+v", f.actions)
	}
}
