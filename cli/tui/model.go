package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textarea"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/text"
)

// Messages of the model.
type (
	// historyMsg is one history answer for session (gen: which attach).
	historyMsg struct {
		gen int
		r   taskwire.Result
		err error
	}
	// actionMsg is a task action's outcome.
	actionMsg struct {
		say     string
		err     error
		sent    string // the input text it sent ("" for none)
		session string // a start: the new session
		owner   string
		queued  string   // a follow-up: its task
		call    string   // an answer: its call (answered again on an error)
		ids     []string // ids in say, shown short
	}
	rosterMsg struct{ rows []*api.SessionRow }
	retryMsg  struct{ gen int }
	tickMsg   struct{}
	promptMsg struct{ p Prompt }
)

// tasksView is what the TUI keeps of the session's view.
type tasksView struct {
	running string
	queue   []string
	texts   []string // each queued task's text, from the node ("" when it has none)
}

// Model is the TUI's state: what it drew from the node, the input, and
// what is open on top (the picker, the help, a prompt).
type Model struct {
	cfg  Config
	ctx  context.Context
	node Node
	clk  clock.Clock

	session, owner string
	gen            int // counts attaches: a history answer of an earlier one is dropped
	since          int
	polling        bool

	tr       *transcript
	ids      *shortIDs
	md       markdown
	view     *tasksView
	ctxLine  *taskwire.ContextInfo
	roster   []*api.SessionRow
	children []*api.SessionRow
	cwd      string
	sent     map[string]string // follow-ups this TUI queued: task -> text

	vp         viewport.Model
	ta         textarea.Model
	content    int // the transcript version the viewport holds
	width      int
	starts     []int  // the first viewport line of each item
	focus      *item  // the tool call ctrl+o expands (nil: the last)
	hist       int    // -1: not browsing; else an index into the prompts
	draft      string // the input before browsing began
	stash      string // a prompt that could not start a session (no model yet)
	sending    bool   // an action of the input is under way
	status     string // the last action, or an error
	model      string // /model: the model of a new session
	profile    string // /profile: the grants of the next tasks
	grants     []taskwire.Grant
	prompts    []Prompt        // questions of other rooms, oldest first
	answered   map[string]bool // calls answered here, until the node says so
	picker     *picker
	helpOpen   bool
	helpScroll int
	ready      bool
}

// New builds the model; it does no I/O.
func New(ctx context.Context, cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		cfg.Width, cfg.Height = 100, 30
	}
	m := &Model{cfg: cfg, ctx: ctx, node: cfg.Node, clk: cfg.Clock, session: cfg.Session, owner: cfg.Owner,
		tr: newTranscript(), ids: newShortIDs(), sent: map[string]string{}, answered: map[string]bool{}, hist: -1, cwd: cfg.Dir, content: -1}
	if cfg.Start != nil {
		m.model = cfg.Start.Harn.Model
	}
	m.ta = newInput()
	m.vp = viewport.New(cfg.Width, 10)
	m.vp.MouseWheelEnabled = true
	m.vp.KeyMap = viewport.KeyMap{} // keys are routed here (PgUp/PgDn)
	m.resize(cfg.Width, cfg.Height)
	if cfg.First != nil {
		m.absorb(*cfg.First)
	}
	if m.session == "" && len(cfg.Picker) > 0 {
		m.picker = newPicker(cfg.Picker, m.clk.Now())
	}
	m.learnRoster(cfg.Picker)
	return m, nil
}

func newInput() textarea.Model {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = "❯ "
	ta.Placeholder = "ask harn … (Enter sends, Ctrl+J a new line, /help)"
	ta.CharLimit = maxInput
	ta.MaxHeight = 8
	ta.SetHeight(1)
	ta.KeyMap.InsertNewline.SetKeys("ctrl+j")
	ta.KeyMap.Paste.SetEnabled(false) // a paste comes from the terminal (bracketed), never from a clipboard command
	ta.FocusedStyle.CursorLine = ta.FocusedStyle.Base
	ta.Focus()
	return ta
}

func (m *Model) errText(err error) string {
	if m.cfg.ErrText != nil {
		return text.OneLine(m.cfg.ErrText(err))
	}
	return text.OneLine(err.Error())
}

// Init starts the history poll, the roster and the prompts' reader.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.poll(), m.rosterCmd(0), textarea.Blink, m.tick()}
	if m.picker != nil {
		cmds = append(cmds, m.firsts(m.picker.rows))
	}
	if m.cfg.Prompts != nil {
		cmds = append(cmds, m.nextPrompt())
	}
	return tea.Batch(cmds...)
}

func (m *Model) nextPrompt() tea.Cmd {
	ch, done := m.cfg.Prompts, m.ctx.Done()
	return func() tea.Msg {
		select {
		case p, ok := <-ch:
			if !ok {
				return nil
			}
			return promptMsg{p: p}
		case <-done:
			return nil
		}
	}
}

// tick repaints once a second (how long an approval has waited).
func (m *Model) tick() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return tickMsg{} })
}

// call runs one task action; Cmds call it off the Update goroutine, so it
// takes what it needs as arguments.
func (m *Model) call(owner string, a taskwire.Action) (taskwire.Result, error) {
	ctx, cancel := context.WithTimeout(m.ctx, callTimeout)
	defer cancel()
	return m.node.Task(ctx, owner, a)
}

// poll reads the session's next events (a long poll at the owner).
func (m *Model) poll() tea.Cmd {
	if m.session == "" || m.polling {
		return nil
	}
	m.polling = true
	session, since, owner, gen := m.session, m.since, m.owner, m.gen
	return func() tea.Msg {
		r, err := m.call(owner, taskwire.Action{Op: taskwire.OpHistory, Session: session, Since: since, WaitMS: int(pollWait / time.Millisecond)})
		return historyMsg{gen: gen, r: r, err: err}
	}
}

func (m *Model) rosterCmd(after time.Duration) tea.Cmd {
	node, ctx := m.node, m.ctx
	return tea.Tick(after, func(time.Time) tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		rows, _ := node.Sessions(cctx)
		return rosterMsg{rows: rows}
	})
}

func (m *Model) learnRoster(rows []*api.SessionRow) {
	for _, r := range rows {
		m.ids.learn(r.GetSessionId())
	}
}

// absorb takes one history answer.
func (m *Model) absorb(r taskwire.Result) {
	for _, e := range r.Events {
		m.tr.apply(e)
		m.ids.learn(e.Task)
		if e.Type == evTurnStart {
			delete(m.sent, e.Task)
		}
	}
	if r.Next > m.since {
		m.since = r.Next
	}
	if r.Context != nil {
		m.ctxLine = r.Context
	}
	v := &tasksView{}
	if r.View != nil {
		if r.View.Task != nil {
			v.running = r.View.Task.ID
		}
		for i, q := range r.View.Queue {
			v.queue = append(v.queue, q.ID)
			t := ""
			if i < len(r.QueueText) {
				t = r.QueueText[i]
			}
			v.texts = append(v.texts, t)
			m.ids.learn(q.ID)
		}
	}
	m.view = v
}

// attach shows session (owned by owner) from its start: the screen is
// drawn again from the node's history.
func (m *Model) attach(session, owner string) tea.Cmd {
	m.reset(session, owner)
	return m.poll()
}

// reset forgets what was drawn of the session shown so far.
func (m *Model) reset(session, owner string) {
	m.session, m.owner = session, owner
	m.gen++
	m.since, m.polling = 0, false
	m.tr, m.view, m.ctxLine, m.focus, m.children = newTranscript(), nil, nil, nil, nil
	clear(m.answered)
	m.content = -1
	m.ids.learn(session)
}

// running is the task the keys act on: the one the node runs.
func (m *Model) running() string {
	if m.view != nil && m.view.running != "" {
		return m.view.running
	}
	return m.tr.running
}

// Update takes one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
	case historyMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.polling = false
		if msg.err != nil {
			m.status = "error: " + m.errText(msg.err)
			gen := m.gen
			return m, tea.Tick(retryAfter, func(time.Time) tea.Msg { return retryMsg{gen: gen} })
		}
		m.absorb(msg.r)
		m.refresh()
		return m, m.poll()
	case retryMsg:
		if msg.gen == m.gen {
			return m, m.poll()
		}
	case rosterMsg:
		m.takeRoster(msg.rows)
		return m, m.rosterCmd(rosterEvery)
	case tickMsg:
		return m, m.tick()
	case promptMsg:
		m.prompts = append(m.prompts, msg.p)
		return m, m.nextPrompt()
	case actionMsg:
		return m, m.done(msg)
	case pickedMsg:
		return m, m.picked(msg)
	case pickerMsg:
		m.status = ""
		m.picker = newPicker(msg.rows, m.clk.Now())
		m.learnRoster(msg.rows)
		return m, m.firsts(msg.rows)
	case firstsMsg:
		if m.picker != nil {
			m.picker.firsts = msg.texts
		}
	case tea.MouseMsg:
		return m, m.mouse(msg)
	case tea.KeyMsg:
		return m, m.key(msg)
	default:
		var cmd tea.Cmd
		m.ta, cmd = m.ta.Update(msg)
		return m, cmd
	}
	return m, nil
}

func (m *Model) takeRoster(rows []*api.SessionRow) {
	if rows == nil {
		return
	}
	m.roster = rows
	m.learnRoster(rows)
	m.children = m.children[:0]
	for _, r := range rows {
		if m.session != "" && r.GetParentSessionId() == m.session {
			m.children = append(m.children, r)
		}
		if r.GetSessionId() == m.session && r.GetCwd() != "" {
			m.cwd = r.GetCwd()
		}
	}
}

// done takes an action's outcome: the input it sent goes (unless it was
// typed over since), an error leaves it for another try.
func (m *Model) done(msg actionMsg) tea.Cmd {
	m.sending = false
	if msg.err != nil {
		m.status = "error: " + m.errText(msg.err)
		delete(m.answered, msg.call)
		if msg.sent != "" && strings.TrimSpace(m.ta.Value()) == "" {
			m.ta.SetValue(msg.sent)
			m.fitInput()
		}
		return nil
	}
	m.ids.learn(msg.ids...)
	m.ids.learn(msg.queued)
	for _, id := range append(msg.ids, msg.queued) {
		if id != "" {
			msg.say = strings.ReplaceAll(msg.say, id, m.ids.short(id))
		}
	}
	m.status = clean(msg.say)
	if msg.sent != "" && strings.TrimSpace(m.ta.Value()) == strings.TrimSpace(msg.sent) {
		m.ta.Reset()
		m.fitInput()
	}
	if msg.queued != "" && len(m.sent) < maxPending {
		m.sent[msg.queued] = msg.sent
		m.ids.learn(msg.queued)
	}
	if msg.session != "" && m.session == "" {
		return m.attach(msg.session, msg.owner)
	}
	return nil
}

// send sends the input: Enter steers the running task (with the turn it
// saw, so a steer of an ended turn becomes a follow-up and says so); a
// follow-up queues after the running task; with no session yet either
// starts one. The input stays until the node took it.
func (m *Model) send(followUp bool) tea.Cmd {
	line := strings.TrimSpace(m.ta.Value())
	if line == "" || m.sending {
		return nil
	}
	if strings.HasPrefix(line, "/") {
		return m.slash(line)
	}
	m.hist = -1
	if m.session == "" {
		return m.start(line)
	}
	session, running, owner, grants := m.session, m.running(), m.owner, m.grants
	// an ended session (its node restarted) opens again: with this TUI's
	// key, else (an attach, from any node) with its node's own provider
	reopen := &taskwire.HarnOptions{}
	if m.cfg.Start != nil {
		reopen.Key = m.cfg.Start.Harn.Key
	}
	m.sending = true
	if followUp || running == "" {
		m.status = "queueing a follow-up …"
		return func() tea.Msg {
			r, err := m.call(owner, taskwire.Action{Op: taskwire.OpFollowUp, Session: session, Text: line, Grants: grants, Harn: reopen})
			if err != nil {
				return actionMsg{err: err, sent: line}
			}
			id := taskID(r)
			say := "follow-up " + id + " queued"
			if r.Task != nil && r.Task.Position > 0 {
				say += fmt.Sprintf(" (position %d)", r.Task.Position)
			} else if !followUp {
				say = "started " + id
			}
			if r.Reopened {
				say = "reopened the session (it had ended); " + say
			}
			return actionMsg{say: say, queued: id, sent: line}
		}
	}
	m.status = "steering …"
	short := m.ids.short(running)
	return func() tea.Msg {
		r, err := m.call(owner, taskwire.Action{Op: taskwire.OpSteer, Session: session, Task: running, Text: line})
		if err != nil {
			return actionMsg{err: err, sent: line}
		}
		if r.Steer != nil && r.Steer.Mode == "follow_up" {
			return actionMsg{say: "the turn had ended: the steer became follow-up " + r.Steer.Task, sent: line, ids: []string{r.Steer.Task}}
		}
		return actionMsg{say: "steered " + short + ": delivered at the next step boundary", sent: line}
	}
}

// start starts a new session with line as its first prompt.
func (m *Model) start(line string) tea.Cmd {
	if m.cfg.Start == nil {
		m.status = "error: no session here to send to"
		return nil
	}
	if m.model == "" {
		m.stash = line
		m.status = "no model named: type /model NAME (your prompt comes back after it)"
		return nil
	}
	a := *m.cfg.Start
	h := *a.Harn
	h.Model = m.model
	a.Harn, a.Text = &h, line
	if m.grants != nil {
		a.Grants = m.grants
	}
	m.sending = true
	m.status = "starting a session …"
	return func() tea.Msg {
		r, err := m.call("", a)
		if err != nil {
			return actionMsg{err: err, sent: line}
		}
		return actionMsg{say: "started session " + r.Session, session: r.Session, owner: r.Node, sent: line, ids: []string{r.Session}}
	}
}

// abort cancels the running task: its generation, running tools and
// pending calls stop through the barrier.
func (m *Model) abort() tea.Cmd {
	running, owner := m.running(), m.owner
	if running == "" {
		m.status = "nothing to abort: no task runs"
		return nil
	}
	short := m.ids.short(running)
	m.status = "aborting " + short + " …"
	return func() tea.Msg {
		r, err := m.call(owner, taskwire.Action{Op: taskwire.OpCancel, Task: running, Reason: "Esc in the TUI"})
		if err != nil {
			return actionMsg{err: err}
		}
		say := "aborted " + short
		if r.Interrupt != "" {
			say += ": " + text.OneLine(r.Interrupt)
		}
		return actionMsg{say: say}
	}
}

// answer approves or denies a pending call.
func (m *Model) answer(it *item, allow bool) tea.Cmd {
	op, verb := taskwire.OpDeny, "denied"
	if allow {
		op, verb = taskwire.OpConfirm, "approved"
	}
	owner, task, call, tool, args := m.owner, it.task, it.call, it.tool, it.args
	m.status = verb + " " + clean(tool) + " …"
	m.answered[call] = true // the next pending one shows
	return func() tea.Msg {
		if _, err := m.call(owner, taskwire.Action{Op: op, Task: task, Call: call, Reason: "answered in the TUI"}); err != nil {
			return actionMsg{err: err, call: call}
		}
		return actionMsg{say: verb + " " + clean(tool) + " " + summaryShort(tool, args)}
	}
}

func summaryShort(tool, args string) string { return text.Clip(summary(tool, args), 80) }

func taskID(r taskwire.Result) string {
	if r.Task == nil {
		return "?"
	}
	return r.Task.ID
}
