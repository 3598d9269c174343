package tui

import (
	"context"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// Help is the TUI's keys and slash commands, as /help shows them (and
// `harn chat --help` prints them).
const Help = `Keys
  Enter            send: steers the running task (an answer being written restarts
                   around it; running tool calls finish first); with no task
                   running, starts one (the first starts the session)
  Tab, Alt+Enter   queue the text as a follow-up that runs after the current task
  Ctrl+J           a new line in the input (Shift+Enter is Enter in most terminals)
  ←→ Home End      move in the input; Alt+←→ by word; Ctrl+U/Ctrl+K delete to the start/end
  ↑ ↓              earlier prompts of this session (on the input's first/last line)
  y / n            with the input empty: approve or deny what the box above asks
  Esc              abort the running task (its generation, tools and pending calls)
  PgUp PgDn, wheel scroll the transcript; Ctrl+Home/Ctrl+End: top/bottom
  Ctrl+O, click    expand or collapse a tool call's diff and output (the last, or the clicked)
  Ctrl+C, Ctrl+D   leave; the session goes on in the node (run harn again: it comes back)

Slash commands
  /help            this help (Esc closes it)
  /sessions        the sessions of this directory: pick one, or start a new one
  /new             leave this session: the next prompt starts a new one
  /model NAME      the model of the next new session
  /profile NAME    the grants of the next tasks: read-only, confirm, edit or full,
                   within the session's (a new session's: any; harn profiles lists them)
  /compact         compact the session's context now (while a task runs: at its next step)
  /pin TEXT        pin a text into the session's context: every request carries it
                   (while a task runs: from its next step, never inside a tool call)
  /quit            leave, as Ctrl+C

A session's tasks hold the grants it started with (--profile, /profile before
its first prompt; default confirm: reads freely, asks before the rest).
Holding Shift while selecting copies text with the mouse.`

// slash runs a slash command typed in the input.
func (m *Model) slash(line string) tea.Cmd {
	name, arg, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	arg = strings.TrimSpace(arg)
	clearInput := func() {
		m.ta.Reset()
		m.fitInput()
	}
	switch name {
	case "help":
		clearInput()
		m.helpOpen, m.helpScroll = true, 0
	case "quit", "exit":
		return tea.Quit
	case "sessions":
		clearInput()
		return m.openPicker()
	case "new":
		clearInput()
		if m.cfg.Start == nil {
			m.status = "error: this TUI attached to a session; run harn chat to start one"
			return nil
		}
		m.attach("", "")
		m.status = "no session: the next prompt starts a new one"
		if m.model == "" {
			m.status += " (name its model first: /model NAME)"
		}
	case "model":
		if arg == "" {
			m.status = "/model NAME names the model of a new session (now: " + orNone(m.model) + ")"
			return nil
		}
		if m.cfg.Start == nil {
			m.status = "error: this TUI attached to a session; its model is fixed"
			return nil
		}
		clearInput()
		m.model = arg
		if m.session == "" {
			m.status = "model " + clean(arg) + ": the next prompt starts a session with it"
		} else {
			m.status = "model " + clean(arg) + " for the next new session (/new); this session keeps its model"
		}
		if m.stash != "" {
			m.ta.SetValue(m.stash)
			m.stash = ""
			m.fitInput()
			m.status += "; your prompt is back: Enter sends it"
		}
	case "profile":
		if arg == "" {
			m.status = "/profile NAME: read-only, confirm, edit or full (now: " + orNone(m.profile) + "; none: the session's)"
			return nil
		}
		g, err := taskwire.Profile(arg)
		if err != nil {
			m.status = fmt.Sprintf("error: no profile %q: use read-only, confirm, edit or full", clean(arg))
			return nil
		}
		clearInput()
		m.profile, m.grants = arg, g
		m.status = "profile " + arg + " for the next tasks, within the session's (a new session starts with it; a steer keeps its task's)"
	case "compact":
		clearInput()
		return m.contextOp(taskwire.Action{Op: taskwire.OpCompact}, "compacting …")
	case "pin":
		if arg == "" {
			m.status = "/pin TEXT: the text every request of this session carries"
			return nil
		}
		clearInput()
		return m.contextOp(taskwire.Action{Op: taskwire.OpPin, Text: arg}, "pinning …")
	default:
		m.status = fmt.Sprintf("unknown command /%s: /help lists the commands", clean(name))
	}
	return nil
}

// contextOp sends a pin or a compaction of the session's context to its
// owner; the node says what it did (or that it waits for the step).
func (m *Model) contextOp(a taskwire.Action, doing string) tea.Cmd {
	if m.session == "" {
		m.status = "error: no session yet: the first prompt starts one"
		return nil
	}
	a.Session = m.session
	owner := m.owner
	m.status = doing
	return func() tea.Msg {
		r, err := m.call(owner, a)
		if err != nil {
			return actionMsg{err: err}
		}
		return actionMsg{say: r.Message, ids: []string{r.Session}}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return clean(s)
}

// openPicker lists the sessions of this directory again.
func (m *Model) openPicker() tea.Cmd {
	node, ctx, dir := m.node, m.ctx, m.cwd
	if m.cfg.Dir != "" {
		dir = m.cfg.Dir
	}
	m.status = "reading the sessions …"
	return func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		rows, err := node.Sessions(cctx)
		if err != nil {
			return actionMsg{err: err}
		}
		return pickerMsg{rows: SessionsOf(rows, dir)}
	}
}

func (m *Model) helpView() string {
	lines := strings.Split(Help, "\n")
	h := m.cfg.Height - 2
	m.helpScroll = min(m.helpScroll, max(len(lines)-h, 0))
	lines = lines[m.helpScroll:]
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		lines[i] = truncate(l, m.width)
	}
	head := stHeader.Render(padRight(" harn · help (Esc closes, ↑↓ scroll)", m.width))
	return head + "\n" + strings.Join(lines, "\n")
}
