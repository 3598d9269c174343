package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/text"
)

// The session picker: the harn sessions of this directory, newest first,
// each with its first prompt and its age; Enter picks one, n (or the
// last row) starts a new one.

type (
	pickerMsg struct{ rows []*api.SessionRow }
	// firstsMsg is the first prompt of sessions of the picker.
	firstsMsg struct{ texts map[string]string }
	pickedMsg struct {
		gen     int
		session string
		owner   string
		r       taskwire.Result
		err     error
	}
)

// SessionsOf is the harn sessions of directory dir among rows (children
// aside), newest first, at most maxPicker.
func SessionsOf(rows []*api.SessionRow, dir string) []*api.SessionRow {
	var out []*api.SessionRow
	for _, r := range rows {
		if r.GetAgent() == taskwire.AgentHarn && strings.HasPrefix(r.GetSessionId(), "h-") && r.GetParentSessionId() == "" && r.GetCwd() == dir {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return lastAt(out[i]) > lastAt(out[j]) })
	if len(out) > maxPicker {
		out = out[:maxPicker]
	}
	return out
}

func lastAt(r *api.SessionRow) int64 {
	return max(r.GetLastEventAtUnixNano(), r.GetStartedAtUnixNano())
}

// pickerFirsts bounds the sessions whose first prompt the picker reads.
const pickerFirsts = 20

type picker struct {
	rows   []*api.SessionRow
	firsts map[string]string // session -> its first prompt
	sel    int               // len(rows): the new-session row
	now    time.Time
	busy   bool
}

func newPicker(rows []*api.SessionRow, now time.Time) *picker {
	return &picker{rows: rows, now: now}
}

func (m *Model) pickerKey(k tea.KeyMsg) tea.Cmd {
	p := m.picker
	if p.busy {
		return nil
	}
	switch k.String() {
	case "up", "k", "ctrl+p":
		p.sel = max(p.sel-1, 0)
	case "down", "j", "ctrl+n":
		p.sel = min(p.sel+1, len(p.rows))
	case "home":
		p.sel = 0
	case "end":
		p.sel = len(p.rows)
	case "n", "esc":
		return m.pickNew()
	case "enter":
		if p.sel >= len(p.rows) {
			return m.pickNew()
		}
		r := p.rows[p.sel]
		p.busy = true
		m.status = "opening session " + m.ids.short(r.GetSessionId()) + " …"
		m.gen++
		gen, session := m.gen, r.GetSessionId()
		return func() tea.Msg {
			res, err := m.call("", taskwire.Action{Op: taskwire.OpHistory, Session: session})
			return pickedMsg{gen: gen, session: session, owner: res.Node, r: res, err: err}
		}
	}
	return nil
}

// firsts reads the first prompt of the picker's newest sessions from
// their histories (the roster keeps no prompt text).
func (m *Model) firsts(rows []*api.SessionRow) tea.Cmd {
	if len(rows) == 0 {
		return nil
	}
	var ids []string
	for _, r := range rows[:min(len(rows), pickerFirsts)] {
		ids = append(ids, r.GetSessionId())
	}
	return func() tea.Msg {
		out := map[string]string{}
		for _, id := range ids {
			r, err := m.call("", taskwire.Action{Op: taskwire.OpHistory, Session: id})
			if err != nil {
				continue
			}
			for _, e := range r.Events {
				if e.Type == evTurnStart {
					out[id] = e.Text
					break
				}
			}
		}
		return firstsMsg{texts: out}
	}
}

// pickNew closes the picker for a new session at the next prompt.
func (m *Model) pickNew() tea.Cmd {
	m.picker = nil
	if m.session != "" && m.cfg.Start != nil {
		m.attach("", "")
	}
	if m.cfg.Start == nil {
		return nil
	}
	m.status = "a new session starts at your first prompt"
	if m.model == "" {
		m.status += " (name its model first: /model NAME)"
	}
	return nil
}

// picked attaches to the picked session with its first history answer.
func (m *Model) picked(msg pickedMsg) tea.Cmd {
	if msg.gen != m.gen || m.picker == nil {
		return nil
	}
	m.picker.busy = false
	if msg.err != nil {
		m.status = "error: " + m.errText(msg.err)
		return nil
	}
	m.picker = nil
	m.reset(msg.session, msg.owner)
	m.absorb(msg.r)
	m.refresh()
	m.status = "session " + m.ids.short(msg.session)
	return m.poll()
}

func (p *picker) view(w, h int, ids *shortIDs) string {
	rows := []string{stHeader.Render(padRight(" harn · sessions of this directory (↑↓ choose · Enter open · n new · Ctrl+C leave)", w)), ""}
	for i, r := range p.rows {
		state := "live"
		if r.GetEnded() {
			state = "ended"
		}
		age := text.Age(p.now, time.Unix(0, lastAt(r)))
		task := p.firsts[r.GetSessionId()]
		if task == "" {
			task = r.GetSessionName()
		}
		line := fmt.Sprintf("%-10s %6s %-5s  %s", ids.short(r.GetSessionId()), age, state, clean(text.OneLine(task)))
		rows = append(rows, p.mark(i)+truncate(line, w-2))
	}
	rows = append(rows, p.mark(len(p.rows))+stOK.Render("+ new session"))
	head, list := rows[:2], rows[2:]
	if room := max(h-2, 1); len(list) > room {
		start := min(max(p.sel-room/2, 0), len(list)-room)
		list = list[start : start+room]
	}
	return strings.Join(append(head, list...), "\n")
}

func (p *picker) mark(i int) string {
	if i == p.sel {
		return stUser.Render("❯ ")
	}
	return "  "
}

func truncate(s string, w int) string { return ansi.Truncate(s, max(w, 1), "…") }
