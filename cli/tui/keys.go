package tui

import (
	tea "github.com/charmbracelet/bubbletea"
)

// key takes one key: the picker and the help first when open, then the
// screen's keys, then the input.
func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "ctrl+c", "ctrl+d":
		return tea.Quit
	}
	if m.picker != nil {
		return m.pickerKey(k)
	}
	if m.helpOpen {
		switch k.String() {
		case "esc", "q", "enter":
			m.helpOpen = false
		case "pgup", "up":
			m.helpScroll = max(m.helpScroll-5, 0)
		case "pgdown", "down":
			m.helpScroll += 5
		}
		return nil
	}
	empty := m.ta.Value() == ""
	switch k.String() {
	case "enter":
		return m.send(false)
	case "alt+enter", "tab":
		return m.send(true)
	case "esc":
		if !empty && m.hist >= 0 {
			m.leaveHistory()
			return nil
		}
		return m.abort()
	case "pgup":
		m.vp.PageUp()
		return nil
	case "pgdown":
		m.vp.PageDown()
		return nil
	case "ctrl+home":
		m.vp.GotoTop()
		return nil
	case "ctrl+end":
		m.vp.GotoBottom()
		return nil
	case "ctrl+o":
		m.toggle(m.focused())
		return nil
	case "up":
		if m.ta.Line() == 0 && m.browse(-1) {
			return nil
		}
	case "down":
		if m.ta.Line() == m.ta.LineCount()-1 && m.hist >= 0 && m.browse(1) {
			return nil
		}
	}
	if empty && k.Type == tea.KeyRunes && !k.Alt && len(k.Runes) == 1 {
		switch k.Runes[0] {
		case 'y', 'n':
			if cmd, ok := m.answerTop(k.Runes[0] == 'y'); ok {
				return cmd
			}
		}
	}
	var cmd tea.Cmd
	m.ta, cmd = m.ta.Update(k)
	m.fitInput()
	return cmd
}

// answerTop answers what the y/n panel shows: a prompt of another room
// first, else the oldest pending call.
func (m *Model) answerTop(yes bool) (tea.Cmd, bool) {
	if len(m.prompts) > 0 {
		p := m.prompts[0]
		m.prompts = m.prompts[1:]
		if p.Answer == nil {
			return nil, true
		}
		return p.Answer(yes), true
	}
	if it := m.topPending(); it != nil {
		return m.answer(it, yes), true
	}
	return nil, false
}

// topPending is the oldest pending call not answered here yet.
func (m *Model) topPending() *item {
	for _, it := range m.tr.pending {
		if !m.answered[it.call] {
			return it
		}
	}
	return nil
}

// waitingCount is how many calls wait for an answer.
func (m *Model) waitingCount() int {
	n := 0
	for _, it := range m.tr.pending {
		if !m.answered[it.call] {
			n++
		}
	}
	return n
}

// browse moves through the session's earlier prompts: dir -1 older, +1
// newer; past the newest the draft comes back.
func (m *Model) browse(dir int) bool {
	ps := m.tr.prompts
	if len(ps) == 0 {
		return false
	}
	i := m.hist
	if i < 0 {
		if dir > 0 {
			return false
		}
		m.draft = m.ta.Value()
		i = len(ps)
	}
	i += dir
	switch {
	case i < 0:
		i = 0
	case i >= len(ps):
		m.leaveHistory()
		return true
	}
	m.hist = i
	m.ta.SetValue(ps[i])
	m.fitInput()
	return true
}

func (m *Model) leaveHistory() {
	m.hist = -1
	m.ta.SetValue(m.draft)
	m.draft = ""
	m.fitInput()
}

// focused is the tool call ctrl+o expands: the one last clicked, else
// the newest.
func (m *Model) focused() *item {
	if m.focus != nil {
		return m.focus
	}
	return m.tr.lastTool()
}

func (m *Model) toggle(it *item) {
	if it == nil || it.kind != kTool {
		return
	}
	it.expanded = !it.expanded
	it.touch()
	m.focus = it
	m.refreshKeep()
}

// mouse scrolls with the wheel; a click on a tool call expands or
// collapses it.
func (m *Model) mouse(msg tea.MouseMsg) tea.Cmd {
	if m.picker != nil || m.helpOpen {
		return nil
	}
	if msg.Action == tea.MouseActionPress && msg.Button == tea.MouseButtonLeft {
		row := msg.Y - m.vpTop() + m.vp.YOffset
		if row >= 0 && msg.Y >= m.vpTop() && msg.Y < m.vpTop()+m.vp.Height {
			if it := m.itemAt(row); it != nil {
				m.toggle(it)
			}
		}
		return nil
	}
	var cmd tea.Cmd
	m.vp, cmd = m.vp.Update(msg)
	return cmd
}

// itemAt is the item drawn at viewport line row.
func (m *Model) itemAt(row int) *item {
	for i := len(m.starts) - 1; i >= 0; i-- {
		if m.starts[i] <= row {
			if i < len(m.tr.items) {
				return m.tr.items[i]
			}
			return nil
		}
	}
	return nil
}
