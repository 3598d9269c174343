package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

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
