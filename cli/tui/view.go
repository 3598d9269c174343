package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/harn-dev/harn/util/text"
)

// The screen, top to bottom: the header, the transcript (a viewport:
// PgUp/PgDn and the wheel scroll it), the y/n panel when something waits
// for an answer, the session's lines (context, queue, children, the last
// action), the input and the keys.

// resize lays the screen out for a terminal of w×h cells.
func (m *Model) resize(w, h int) {
	m.width, m.cfg.Height = max(w, 20), max(h, 8)
	m.ta.SetWidth(m.width)
	m.layout()
	m.refresh()
}

// layout gives the viewport what the other parts leave.
func (m *Model) layout() {
	fixed := 1 + len(m.panel()) + len(m.footer()) + m.ta.Height() + 1
	m.vp.Width = m.width
	m.vp.Height = max(m.cfg.Height-fixed, 3)
}

// vpTop is the screen row of the viewport's first line.
func (m *Model) vpTop() int { return 1 }

// fitInput grows the input with its lines (up to its max).
func (m *Model) fitInput() {
	n := min(max(m.ta.LineCount(), 1), m.ta.MaxHeight)
	if n != m.ta.Height() {
		m.ta.SetHeight(n)
	}
}

// refresh draws the transcript into the viewport, following the bottom
// when it was there.
func (m *Model) refresh() {
	at := m.vp.AtBottom() || m.content < 0
	m.rebuild()
	if at {
		m.vp.GotoBottom()
	}
}

// refreshKeep draws the transcript again where the view is.
func (m *Model) refreshKeep() {
	off := m.vp.YOffset
	m.rebuild()
	m.vp.SetYOffset(off)
}

func (m *Model) rebuild() {
	w := m.width
	var all []string
	m.starts = m.starts[:0]
	for _, it := range m.tr.items {
		m.starts = append(m.starts, len(all))
		all = append(all, m.draw(it, w)...)
	}
	m.vp.SetContent(strings.Join(all, "\n"))
	m.content = m.tr.ver
}

// View draws the screen.
func (m *Model) View() string {
	if m.picker != nil {
		return m.picker.view(m.width, m.cfg.Height, m.ids)
	}
	if m.helpOpen {
		return m.helpView()
	}
	if m.content != m.tr.ver {
		m.refresh()
	}
	at := m.vp.AtBottom()
	m.fitInput()
	m.layout()
	if at {
		m.vp.GotoBottom()
	}
	rows := []string{m.header()}
	rows = append(rows, m.vp.View())
	rows = append(rows, m.panel()...)
	rows = append(rows, m.footer()...)
	rows = append(rows, m.ta.View())
	rows = append(rows, stKeys.Render(truncate(m.keysLine(), m.width)))
	return strings.Join(rows, "\n")
}

func (m *Model) header() string {
	h := " harn"
	if m.session != "" {
		h += " · session " + m.ids.short(m.session)
		if m.owner != "" {
			h += " on " + clean(m.owner)
		}
	} else {
		h += " · no session yet: type a prompt"
	}
	if r := m.running(); r != "" {
		h += " · running " + m.ids.short(r)
	} else if m.tr.last != "" {
		h += " · idle (" + m.ids.short(m.tr.last) + " " + clean(m.tr.lastEnd) + ")"
	}
	if m.model != "" && m.session == "" {
		h += " · model " + clean(m.model)
	}
	if m.profile != "" {
		h += " · profile " + m.profile
	}
	if !m.vp.AtBottom() {
		h += fmt.Sprintf(" · scrolled %d%% (ctrl+end: bottom)", int(m.vp.ScrollPercent()*100))
	}
	return stHeader.Render(padRight(ansi.Truncate(h, m.width, "…"), m.width))
}

func padRight(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// panel is the y/n box: a prompt of another room, else the oldest
// pending call with what it would do.
func (m *Model) panel() []string {
	var p Prompt
	st := stBox
	switch {
	case len(m.prompts) > 0:
		p = m.prompts[0]
	case m.topPending() != nil:
		p = m.approval(m.topPending())
		st = stBoxWarn
	default:
		return nil
	}
	return m.drawPrompt(p, st)
}

// maxPanel is the share of the screen the y/n box may take.
func (m *Model) maxPanel() int { return max(m.cfg.Height/2, 6) }

func (m *Model) drawPrompt(p Prompt, st lipgloss.Style) []string {
	inner := max(m.width-4, 10)
	var body []string
	body = append(body, stWarn.Render(clean(p.Title)))
	for _, l := range p.Lines {
		for _, s := range cleanLines(l) {
			body = append(body, wrapLine(s, inner)...)
		}
	}
	if p.Diff != "" {
		for _, s := range diffLines(p.Diff) {
			body = append(body, wrapLine(s, inner)...)
		}
	}
	limit := m.maxPanel() - 3
	if len(body) > limit {
		more := len(body) - limit + 1
		body = append(body[:limit-1:limit-1], stDim.Render(fmt.Sprintf("… %d more lines (the call's line in the transcript shows them: ctrl+o)", more)))
	}
	keys := stOK.Render("y approve") + "  " + stBad.Render("n deny")
	if n := len(m.prompts) + m.waitingCount() - 1; n > 0 {
		keys += stDim.Render(fmt.Sprintf("   (%d more waiting)", n))
	}
	body = append(body, keys)
	box := st.Width(m.width - 2).Render(strings.Join(body, "\n"))
	return strings.Split(box, "\n")
}

// approval is the prompt of a pending call: what it runs, where, for
// which session and agent, and how long it has waited.
func (m *Model) approval(it *item) Prompt {
	p := Prompt{Title: "approve " + clean(it.tool) + "?"}
	agent := "harn"
	for _, r := range m.roster {
		if r.GetSessionId() == m.session && r.GetAgent() != "" {
			agent = r.GetAgent()
		}
	}
	who := "session " + m.ids.short(m.session) + " · agent " + clean(agent) + " · task " + m.ids.short(it.task)
	if !it.asked.IsZero() {
		who += " · waiting " + waited(m.clk.Now().Sub(it.asked))
	}
	p.Lines = append(p.Lines, who)
	a := argsOf(it.args)
	switch {
	case it.tool == "shell" && a != nil:
		for i, l := range strings.Split(strings.TrimRight(str(a, "command"), "\n"), "\n") {
			pre := "  "
			if i == 0 {
				pre = "$ "
			}
			p.Lines = append(p.Lines, pre+l)
		}
		p.Lines = append(p.Lines, "in "+m.cwd)
	case (it.tool == "write" || it.tool == "edit") && a != nil:
		p.Lines = append(p.Lines, "file "+str(a, "path")+" (in "+m.cwd+")")
		p.Diff = it.diff
		if p.Diff == "" && it.tool == "edit" {
			p.Diff = "-" + strings.ReplaceAll(str(a, "old_string"), "\n", "\n-") + "\n+" + strings.ReplaceAll(str(a, "new_string"), "\n", "\n+")
		}
	default:
		p.Lines = append(p.Lines, "arguments: "+it.args)
	}
	return p
}

// waited is a wait drawn short: 12s, 3m05s, 1h02m.
func waited(d time.Duration) string {
	d = max(d, 0).Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// footer is the session's lines above the input.
func (m *Model) footer() []string {
	var out []string
	if l := m.queueLine(); l != "" {
		out = append(out, l)
	}
	if l := m.childrenLine(); l != "" {
		out = append(out, l)
	}
	out = append(out, m.contextLine())
	for i, l := range out {
		out[i] = stDim.Render(ansi.Truncate(l, m.width, "…"))
	}
	st := stBar
	if strings.HasPrefix(m.status, "error") {
		st = stBar.Foreground(lipgloss.Color("9"))
	}
	status := m.status
	if status == "" {
		status = "ready"
	}
	out = append(out, st.Render(padRight(ansi.Truncate(" "+status, m.width, "…"), m.width)))
	return out
}

func (m *Model) contextLine() string {
	c := m.ctxLine
	if c == nil {
		return "context: -"
	}
	s := fmt.Sprintf("context: %d / %d tokens", c.Used, c.Budget)
	if c.Budget > 0 {
		s += fmt.Sprintf(" (%d%%)", c.Used*100/c.Budget)
	}
	if c.Compaction != "" {
		s += " · compacted: " + clean(c.Compaction)
		if !c.CompactedAt.IsZero() {
			s += " at " + c.CompactedAt.Format("15:04:05")
		}
	}
	return s
}

func (m *Model) childrenLine() string {
	if len(m.children) == 0 {
		return ""
	}
	var parts []string
	for i, r := range m.children {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("+%d more", len(m.children)-5))
			break
		}
		state := r.GetActivity()
		if r.GetEnded() {
			state = "ended"
		}
		parts = append(parts, m.ids.short(r.GetSessionId())+" "+clean(r.GetAgent())+" "+clean(state))
	}
	return "children: " + strings.Join(parts, ", ")
}

func (m *Model) queueLine() string {
	if m.view == nil || len(m.view.queue) == 0 {
		return ""
	}
	var parts []string
	for i, id := range m.view.queue {
		s := m.ids.short(id)
		t, ok := m.sent[id]
		if i < len(m.view.texts) && m.view.texts[i] != "" {
			t, ok = m.view.texts[i], true // queued by anyone: the node knows its text
		}
		if ok {
			s += " " + strings.TrimSpace(clean(text.OneLine(text.Clip(t, 40))))
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("queue: %d waiting: %s", len(m.view.queue), strings.Join(parts, ", "))
}

func (m *Model) keysLine() string {
	if m.topPending() != nil || len(m.prompts) > 0 {
		return "y approve · n deny · Esc abort · PgUp/PgDn scroll · ctrl+o expand · /help"
	}
	return "Enter steer/send · Tab follow-up · Ctrl+J newline · ↑↓ history · Esc abort · PgUp/PgDn scroll · ctrl+o expand · /help · Ctrl+C leave"
}
