package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskapi"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/text"
)

// The keys of `agents list --watch` act on the selected row: approve or
// deny its open permission request, open its detail, steer or cancel its
// harn task. Each action is the same node RPC as the CLI command
// (`agents approve|deny`, `task steer|cancel`), so the node applies the
// same checks (remote-control policy, operator identity, runtime rules);
// the result or the refusal is one line in the status bar.

// watchActCallTimeout bounds one action's RPC.
const watchActCallTimeout = 10 * time.Second

// maxSteerInput bounds the steer line typed into the watch.
const maxSteerInput = 4096

// watchHelp is the key help line of the table.
const watchHelp = "↑/↓ j/k select · a approve · d deny · enter detail · s steer · c cancel · q quits"

// watchActor runs the watch's actions against the node.
type watchActor interface {
	// pending lists the open permission requests.
	pending(ctx context.Context) ([]*api.PermissionRequest, error)
	// answer approves or denies a request; it returns the result line.
	answer(ctx context.Context, request string, allow bool) (string, error)
	// task runs a task action; it returns the result line.
	task(ctx context.Context, a taskwire.Action) (string, error)
}

// clientActor is watchActor over the local node's client, with the CLI
// commands' error mapping.
type clientActor struct {
	cl *client
	p  hook.Place
}

func (a clientActor) pending(ctx context.Context) ([]*api.PermissionRequest, error) {
	res, err := a.cl.api.Pending(ctx, &api.PendingRequest{})
	if err != nil {
		return nil, hook.RpcErr(err, a.p)
	}
	return res.GetRequests(), nil
}

func (a clientActor) answer(ctx context.Context, request string, allow bool) (string, error) {
	res, err := a.cl.api.Answer(ctx, &api.AnswerRequest{Request: request, Allow: allow})
	if err != nil {
		return "", taskErr(err, a.p)
	}
	if res.GetRequest() == nil {
		return "", errors.New("the node's answer names no request")
	}
	verb := "denied"
	if allow {
		verb = "approved"
	}
	r := taskapi.RequestFromAPI(res.Request)
	return fmt.Sprintf("%s %s (%s on %s, session %s)", verb, r.ID, r.Tool, r.Node, r.Session), nil
}

func (a clientActor) task(ctx context.Context, act taskwire.Action) (string, error) {
	res, err := a.cl.api.Task(ctx, &api.TaskRequest{Action: taskapi.ActionToAPI(act)})
	if err != nil {
		return "", taskErr(err, a.p)
	}
	r, err := taskapi.ResultFromAPI(res.Result)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if act.Op == taskwire.OpSteer {
		b.WriteString("steered " + act.Session)
		if r.Steer != nil {
			b.WriteString(": " + string(r.Steer.Mode))
		}
		b.WriteString(" · ")
	}
	printTaskResult(&b, act.Op, r)
	return strings.Join(strings.Fields(b.String()), " "), nil
}

// watchMode is what the keys do now.
type watchMode int

const (
	modeTable   watchMode = iota // select rows, start actions
	modeConfirm                  // y/n on m.confirm
	modeInput                    // typing the steer line
	modeDetail                   // the selected session's show view
)

// watchConfirm is an action waiting for y/n. An approval's facts (what
// the call asks, in full) take the screen above the prompt; ↑/↓ scroll
// them when they are taller than it.
type watchConfirm struct {
	prompt string
	facts  []string
	top    int
	run    func(ctx context.Context, a watchActor) (string, error)
}

// Messages of the actions.
type (
	// actDoneMsg is an action's result line or refusal.
	actDoneMsg struct {
		line string
		err  error
	}
	// requestFoundMsg is the open request of a session, to confirm.
	requestFoundMsg struct {
		req   *api.PermissionRequest
		allow bool
	}
)

// selected is the selected row, or nil.
func (m watchModel) selected() *rosterRow {
	if m.sel < 0 || m.sel >= len(m.rows) {
		return nil
	}
	return m.rows[m.sel]
}

// reselect keeps the selection on the same session after a read
// reorders the rows, and the selected row on screen.
func (m *watchModel) reselect() {
	if m.selID != "" {
		for i, r := range m.rows {
			if r.SessionId == m.selID {
				m.sel = i
				break
			}
		}
	}
	m.sel = min(max(m.sel, 0), max(0, len(m.rows)-1))
	if r := m.selected(); r != nil {
		m.selID = r.SessionId
	}
	m.follow()
}

// follow scrolls so that the selected row is shown.
func (m *watchModel) follow() {
	if m.sel < m.top {
		m.top = m.sel
	}
	if p := m.page(); m.sel >= m.top+p {
		m.top = m.sel - p + 1
	}
	m.top = min(max(m.top, 0), max(0, len(m.rows)-1))
}

// moveSel moves the selection by d rows.
func (m watchModel) moveSel(d int) watchModel {
	m.sel = min(max(m.sel+d, 0), max(0, len(m.rows)-1))
	if r := m.selected(); r != nil {
		m.selID = r.SessionId
	}
	m.follow()
	return m
}

// call runs fn against the actor, bounded, as a command.
func (m watchModel) call(fn func(ctx context.Context, a watchActor) (string, error)) tea.Cmd {
	ctx, act := m.ctx, m.act
	return func() tea.Msg {
		if act == nil {
			return actDoneMsg{err: errors.New("no node to act on")}
		}
		cctx, cancel := context.WithTimeout(ctx, watchActCallTimeout)
		defer cancel()
		line, err := fn(cctx, act)
		return actDoneMsg{line: line, err: err}
	}
}

// findRequest looks up the oldest call of a session that waits for an
// operator: its open permission request or its harn task's confirmation.
func (m watchModel) findRequest(session string, allow bool) tea.Cmd {
	ctx, act := m.ctx, m.act
	return func() tea.Msg {
		if act == nil {
			return actDoneMsg{err: errors.New("no node to act on")}
		}
		cctx, cancel := context.WithTimeout(ctx, watchActCallTimeout)
		defer cancel()
		reqs, err := act.pending(cctx)
		if err != nil {
			return actDoneMsg{err: err}
		}
		var found *api.PermissionRequest
		for _, r := range reqs {
			if r.GetSession() == session && r.GetAnswer() == nil && (found == nil || taskapi.RequestFromAPI(r).Opened.Before(taskapi.RequestFromAPI(found).Opened)) {
				found = r
			}
		}
		if found == nil {
			return actDoneMsg{err: fmt.Errorf("session %s has no open permission request (its hook answers remotely only when installed with --remote-approve)", session)}
		}
		return requestFoundMsg{req: found, allow: allow}
	}
}

// approvalFacts are the lines an approval shows before y/n: the tool,
// the session, the agent, its node and how long it has waited; then what
// the call asks, whole (the command, every line of it; the cwd; the file
// and its diff; another tool's input), each line stripped of control
// characters. The view wraps them; nothing is cut but at the node's
// bounds, which a line then names.
func approvalFacts(verb string, r taskwire.Request, now time.Time) []string {
	title := verb + " " + safe(r.Tool)
	if r.Command == "" && r.Path == "" && r.Detail == "" && r.Summary != "" {
		title += ": " + safe(r.Summary)
	}
	title += " · session " + safe(r.Handle())
	if r.Name != "" && r.Session != "" {
		title += " (" + safe(r.Session) + ")"
	}
	if r.Agent != "" {
		title += " · agent " + safe(r.Agent)
	}
	title += " on " + safe(r.Node)
	if !r.Opened.IsZero() {
		title += " · waiting " + text.Age(now, r.Opened)
	}
	out := []string{title}
	for i, l := range strings.Split(text.Lines(r.Command), "\n") {
		switch {
		case r.Command == "":
		case i == 0:
			out = append(out, "$ "+l)
		default:
			out = append(out, "  "+l)
		}
	}
	if r.CommandCut {
		out = append(out, fmt.Sprintf("(the command is longer: its first %d KiB are shown)", taskwire.MaxCommand>>10))
	}
	if r.Path != "" {
		out = append(out, "file "+safe(r.Path))
	}
	if r.Command == "" && r.Path == "" && r.Detail != "" {
		out = append(out, "input "+safe(r.Detail))
	}
	if r.Cwd != "" {
		out = append(out, "in "+safe(r.Cwd))
	}
	if r.Diff != "" {
		out = append(out, strings.Split(text.Lines(r.Diff), "\n")...)
		if r.DiffCut {
			out = append(out, fmt.Sprintf("(the diff is longer: its first %d KiB are shown)", taskwire.MaxDiff>>10))
		}
	}
	if r.Kind == taskwire.KindConfirmation {
		out = append(out, "task "+safe(r.Task)+" · call "+safe(r.Call))
	} else {
		out = append(out, "request "+safe(r.ID))
	}
	return out
}

// factsRows is how many rows the facts of an approval may take: the
// table's rows, less one for the scroll line.
func (m watchModel) factsRows() int { return max(1, m.page()) }

// maxFactsTop is the last first row of the facts' window.
func (m watchModel) maxFactsTop() int {
	w := m.width
	if w <= 0 {
		w = tableWidth
	}
	return max(0, len(wrapFacts(m.confirm.facts, w-2))-m.factsRows())
}

// factsView is the window of an approval's facts the screen shows, with
// where it is in them when they are taller than the screen.
func (m watchModel) factsView(width int) []string {
	all := wrapFacts(m.confirm.facts, width-2)
	rows := m.factsRows()
	if len(all) <= rows {
		return all
	}
	top := min(max(m.confirm.top, 0), len(all)-rows)
	out := append([]string(nil), all[top:top+rows]...)
	return append(out, m.style(watchDim, fmt.Sprintf("lines %d-%d of %d (↑/↓ scroll)", top+1, top+rows, len(all))))
}

// wrapFacts wraps each line to w cells, whole: a long command continues
// on the next rows.
func wrapFacts(lines []string, w int) []string {
	w = max(w, 10)
	var out []string
	for _, l := range lines {
		if lipgloss.Width(l) <= w {
			out = append(out, l)
			continue
		}
		out = append(out, strings.Split(ansi.Wrap(l, w, ""), "\n")...)
	}
	return out
}

// updateAct handles the actions' messages; ok is false for other
// messages.
func (m watchModel) updateAct(msg tea.Msg) (watchModel, tea.Cmd, bool) {
	switch msg := msg.(type) {
	case actDoneMsg:
		m.busy = false
		if msg.err != nil {
			m.status, m.statusErr = "refused: "+safe(msg.err.Error()), true
		} else {
			m.status, m.statusErr = safe(msg.line), false
		}
		return m, nil, true // the next poll shows the change
	case requestFoundMsg:
		m.busy = false
		verb := "deny"
		if msg.allow {
			verb = "approve"
		}
		r, allow := taskapi.RequestFromAPI(msg.req), msg.allow
		run := func(ctx context.Context, a watchActor) (string, error) {
			return a.answer(ctx, r.ID, allow)
		}
		what := "request " + safe(r.ID)
		if r.Kind == taskwire.KindConfirmation {
			what = "call " + safe(r.Call) + " of task " + safe(r.Task)
			op := taskwire.OpDeny
			if allow {
				op = taskwire.OpConfirm
			}
			run = func(ctx context.Context, a watchActor) (string, error) {
				return a.task(ctx, taskwire.Action{Op: op, Task: r.Task, Call: r.Call})
			}
		}
		m.mode = modeConfirm
		m.confirm = watchConfirm{prompt: verb + " " + safe(r.Tool) + " (" + what + ")? y/n", facts: approvalFacts(verb, r, m.now()), run: run}
		return m, nil, true
	}
	return m, nil, false
}

// key handles a key in the current mode.
func (m watchModel) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	if k.Type == tea.KeyCtrlC {
		return m, tea.Quit
	}
	switch m.mode {
	case modeConfirm:
		switch k.String() {
		case "up", "k":
			m.confirm.top = max(m.confirm.top-1, 0)
		case "down", "j":
			m.confirm.top = min(m.confirm.top+1, m.maxFactsTop())
		case "y", "Y":
			m.mode, m.busy, m.status, m.statusErr = modeTable, true, "sending…", false
			return m, m.call(m.confirm.run)
		case "n", "N", "esc", "q":
			m.mode, m.status, m.statusErr = modeTable, "not sent", false
		}
		return m, nil
	case modeInput:
		switch k.Type {
		case tea.KeyEnter:
			msg, r := strings.TrimSpace(m.input), m.selected()
			m.mode, m.input = modeTable, ""
			if msg == "" || r == nil {
				m.status, m.statusErr = "nothing sent", false
				return m, nil
			}
			sid := r.SessionId
			m.busy, m.status, m.statusErr = true, "sending…", false
			return m, m.call(func(ctx context.Context, a watchActor) (string, error) {
				return a.task(ctx, taskwire.Action{Op: taskwire.OpSteer, Session: sid, Text: msg})
			})
		case tea.KeyEsc:
			m.mode, m.input, m.status, m.statusErr = modeTable, "", "nothing sent", false
		case tea.KeyBackspace:
			if rs := []rune(m.input); len(rs) > 0 {
				m.input = string(rs[:len(rs)-1])
			}
		case tea.KeySpace:
			m.input = appendInput(m.input, []rune{' '})
		case tea.KeyRunes:
			m.input = appendInput(m.input, k.Runes)
		}
		return m, nil
	case modeDetail:
		switch k.String() {
		case "esc", "enter", "backspace":
			m.mode = modeTable
		case "q":
			return m, tea.Quit
		}
		return m, nil
	}

	r := m.selected()
	switch k.String() {
	case "q", "esc":
		return m, tea.Quit
	case "down", "j":
		return m.moveSel(1), nil
	case "up", "k":
		return m.moveSel(-1), nil
	case "pgdown", " ":
		return m.moveSel(m.page()), nil
	case "pgup":
		return m.moveSel(-m.page()), nil
	case "home", "g":
		return m.moveSel(-len(m.rows)), nil
	case "end", "G":
		return m.moveSel(len(m.rows)), nil
	case "enter":
		if r != nil {
			m.mode = modeDetail
		}
	case "a", "d":
		if r == nil || m.busy {
			return m, nil
		}
		m.busy, m.status, m.statusErr = true, "looking up the open request…", false
		return m, m.findRequest(r.SessionId, k.String() == "a")
	case "s":
		if r == nil || m.busy {
			return m, nil
		}
		m.mode, m.input = modeInput, ""
	case "c":
		if r == nil || m.busy {
			return m, nil
		}
		if r.HarnTask == nil || r.HarnTask.GetId() == "" {
			m.status, m.statusErr = "refused: session "+safe(r.SessionId)+" runs no harn task (start one with `harn task start`)", true
			return m, nil
		}
		id := r.HarnTask.GetId()
		m.mode = modeConfirm
		m.confirm = watchConfirm{
			prompt: "cancel task " + safe(id) + " (" + safe(text.Clip(r.HarnTask.GetText(), 60)) + ") of session " + safe(r.SessionId) + "? y/n",
			run: func(ctx context.Context, a watchActor) (string, error) {
				return a.task(ctx, taskwire.Action{Op: taskwire.OpCancel, Task: id})
			},
		}
	}
	return m, nil
}

// appendInput adds typed runes to the steer line: printable only,
// bounded.
func appendInput(s string, rs []rune) string {
	for _, r := range rs {
		if len(s) >= maxSteerInput {
			break
		}
		if unicode.IsPrint(r) {
			s += string(r)
		}
	}
	return s
}

// statusLines are the lines under the table: the prompt of the current
// mode or the last action's status, then the key help.
func (m watchModel) statusLines(width int) []string {
	var out []string
	switch m.mode {
	case modeConfirm:
		out = append(out, m.style(watchTitle, m.confirm.prompt))
		if len(m.confirm.facts) > 0 {
			return append(out, m.style(watchDim, "y sends · n drops it · ↑/↓ scroll"))
		}
	case modeInput:
		who := ""
		if r := m.selected(); r != nil {
			who = safe(r.SessionId)
		}
		out = append(out, m.style(watchTitle, "steer "+who+": ")+safe(m.input)+"▏", m.style(watchDim, "enter sends · esc drops"))
		return out
	case modeDetail:
		return []string{m.style(watchDim, "esc back · q quits")}
	default:
		if m.status != "" {
			st := watchDim
			if m.statusErr {
				st = watchWarn
			}
			out = append(out, m.style(st, text.Clip(m.status, max(20, width))))
		}
	}
	return append(out, m.style(watchDim, watchHelp))
}

// detailView renders the selected session's show view.
func (m watchModel) detailText() string {
	r := m.selected()
	if r == nil {
		return "no session selected"
	}
	var b strings.Builder
	if err := (detailView{now: m.now(), loc: time.Local, full: true}).write(&b, r); err != nil {
		return "cannot show the session: " + safe(err.Error())
	}
	return b.String()
}
