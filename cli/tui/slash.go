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
  Enter            send: steers the running task at its next step boundary;
                   with no task running, starts one (the first starts the session)
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
  /profile NAME    the grants of the next tasks: read-only, edit or full
  /compact         compact the session's context now (not available: see below)
  /pin TEXT        pin a text into the session's context (not available: see below)
  /quit            leave, as Ctrl+C

/compact and /pin: the node compacts a session's context on its own at 80% of
its budget and keeps each prompt; neither can be asked for from the TUI yet.
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
			m.status = "/profile NAME: read-only, edit or full (now: " + orNone(m.profile) + ")"
			return nil
		}
		g, err := taskwire.Profile(arg)
		if err != nil {
			m.status = fmt.Sprintf("error: no profile %q: use read-only, edit or full", clean(arg))
			return nil
		}
		clearInput()
		m.profile, m.grants = arg, g
		m.status = "profile " + arg + " for the next tasks (follow-ups and new sessions; a steer keeps its task's)"
	case "compact":
		clearInput()
		m.status = "/compact is not available: the node compacts this session's context by itself at 80% of its budget"
	case "pin":
		clearInput()
		m.status = "/pin is not available: the node has no pin operation for a session's context yet"
	default:
		m.status = fmt.Sprintf("unknown command /%s: /help lists the commands", clean(name))
	}
	return nil
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
