//go:build !harn_hook

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/text"
)

// `harn chat [--session ID]`, `harn` with no arguments, and `harn attach
// SESSION`: the thin TUI of harn's own agent. It holds no session state:
// it reads a session's loop events from the node that owns it (the
// history op of the task RPC, a long poll), paints them, and sends the
// keys as task actions through the same path as `harn task`. Killing it
// loses nothing; run again, it paints the same screen from the node.

// Chat bounds.
const (
	// chatPollWait is how long one history call waits for an event.
	chatPollWait = time.Second
	// chatCallTimeout bounds one task action of the TUI.
	chatCallTimeout = 12 * time.Second
	// chatRetry is the pause after a failed history call.
	chatRetry = time.Second
	// chatChildrenEvery is how often the children are read from the roster.
	chatChildrenEvery = 2 * time.Second
	// maxChatInput bounds the input line.
	maxChatInput = 16 << 10
	// nodeStartWait bounds the wait for a node the TUI started.
	nodeStartWait = 15 * time.Second
)

// Environment of a new chat session without flags (`harn` alone).
const (
	envModel       = "HARN_MODEL"
	envProviderURL = "HARN_PROVIDER_URL"
	envProvider    = "HARN_PROVIDER"
)

// ErrChat means the TUI could not attach.
var ErrChat = errors.New("chat")

func newChatCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "chat [--session ID]",
		Short: "the TUI of harn's own agent on the local node (as `harn` alone)",
		Long: `chat is the TUI of harn's own agent. It attaches to the local node, starting it
if none runs (as a hook does), and to a harn session: --session ID, else the
latest live one of this directory, else a new one at the first prompt (its
model from --model or HARN_MODEL, its provider from --provider-url or
HARN_PROVIDER_URL). The session lives in the node: kill the TUI and run it
again, and the screen comes back from the node's history.

Keys: Enter steers the running task in place (delivered at the next step
boundary; with no task running it starts one); Alt+Enter or Tab queues a
follow-up; Esc aborts the running task's foreground step (generation and
tools); y or n answers a pending approval when the input line is empty;
Ctrl+C or Ctrl+D leaves (the session goes on in the node).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			s, _ := c.Flags().GetString("session")
			return runChat(c, s, false)
		},
	}
	c.Flags().String("session", "", "attach to this harn session (an id, prefix or name)")
	addHarnFlags(c)
	addGrantFlags(c)
	return c
}

func newAttachCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "attach SESSION",
		Short: "sit down at a hosted agent's terminal, or attach the TUI to a harn session, on any node, through its owner",
		Long: `attach opens, on a hosted session (harn run), that agent's own terminal, full
screen: what it draws comes back, what you type goes in, resizes follow.
Ctrl+] detaches and leaves the agent running. Several people may attach at
once; --read-only watches without typing. On harn's own sessions it opens the
TUI of harn chat. A session is named by id, prefix or name as other commands
take sessions. Reads and keys go to the session's owner through the local
node, under the owner's --remote-control policy: a caller it does not permit
is refused (exit 16); one only its --remote-watch names may watch.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ro, _ := c.Flags().GetBool("read-only")
			if err := attachHosted(c, args[0], ro); !errors.Is(err, errNotHosted) {
				return err
			}
			return runChat(c, args[0], true)
		},
	}
	c.Flags().Bool("read-only", false, "watch a hosted terminal without typing into it")
	return c
}

// chatAPI is what the TUI needs of the node: task actions and the roster.
type chatAPI interface {
	task(ctx context.Context, node string, a taskwire.Action) (taskwire.Result, error)
	children(ctx context.Context, parent string) ([]*api.SessionRow, error)
}

type nodeChat struct {
	cl *client
	p  place
}

func (n nodeChat) task(ctx context.Context, node string, a taskwire.Action) (taskwire.Result, error) {
	res, err := n.cl.api.Task(ctx, &api.TaskRequest{Action: taskwire.ActionToAPI(a), Node: node})
	if err != nil {
		return taskwire.Result{}, taskErr(err, n.p)
	}
	return taskwire.ResultFromAPI(res.Result)
}

func (n nodeChat) children(ctx context.Context, parent string) ([]*api.SessionRow, error) {
	res, err := n.cl.api.List(ctx, &api.ListRequest{})
	if err != nil {
		return nil, rpcErr(err, n.p)
	}
	var out []*api.SessionRow
	for _, r := range res.GetRows() {
		if r.GetParentSessionId() == parent && parent != "" {
			out = append(out, r)
		}
	}
	return out, nil
}

// ensureNode starts the local node when none answers, and waits for it:
// the one command besides a hook that starts a node, since the TUI is
// how a person starts harn's own agent.
func ensureNode(ctx context.Context, p place) error {
	dead, err := probeSocket(p.Socket)
	if err != nil || !dead {
		return err
	}
	if err := startNode(p); err != nil {
		return fmt.Errorf("%w: could not start a node: %w", ErrChat, err)
	}
	deadline := clk.Now().Add(nodeStartWait)
	for clk.Now().Before(deadline) {
		if dead, err := probeSocket(p.Socket); err != nil {
			return err
		} else if !dead {
			return nil
		}
		if !clock.Sleep(clk, 50*time.Millisecond, ctx.Done()) {
			return ctx.Err()
		}
	}
	return noNode(p)
}

// runChat runs the TUI on session handle ("" for the latest of this
// directory or a new one); attach needs the handle and never starts a
// node or a session.
func runChat(c *cobra.Command, handle string, attach bool) error {
	ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGTERM)
	defer stop()
	p := placeOf(c)
	if !attach {
		if err := ensureNode(ctx, p); err != nil {
			return err
		}
	}
	cl, err := connect(ctx, p, 5*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	na := nodeChat{cl: cl, p: p}
	m := &chatModel{ctx: ctx, api: na, tr: newTranscript(), width: 100, height: 30, sent: map[string]string{}}
	wd, _ := os.Getwd()
	if !attach {
		if m.start, err = chatStart(c, wd); err != nil {
			return err
		}
		if handle == "" {
			handle = latestHarnSession(ctx, cl, wd)
		}
	}
	if handle != "" {
		// The first read resolves the session at its owner, and is where
		// the owner's policy refuses a caller it does not permit.
		cctx, cancel := context.WithTimeout(ctx, chatCallTimeout)
		r, err := na.task(cctx, "", taskwire.Action{Op: taskwire.OpHistory, Session: handle})
		cancel()
		if err != nil {
			return err
		}
		m.session, m.owner = r.Session, r.Node
		m.absorb(r)
	}
	out := c.OutOrStdout()
	if !isTerminal(out) {
		return usageErr(fmt.Errorf("%w: the TUI needs a terminal; use `harn ask` without one", ErrChat))
	}
	prog := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx), tea.WithOutput(out), tea.WithInput(c.InOrStdin()))
	_, err = prog.Run()
	if errors.Is(err, tea.ErrProgramKilled) || errors.Is(err, tea.ErrInterrupted) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// chatStart is the start action of a new session from the flags (chat)
// or the environment (`harn` alone); nil when no model is named.
func chatStart(c *cobra.Command, wd string) (*taskwire.Action, error) {
	o := &taskwire.HarnOptions{}
	flag := func(name string) string {
		if f := c.Flags().Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	o.Provider, o.URL, o.Model = flag("provider"), flag("provider-url"), flag("model")
	if o.Model == "" {
		o.Model = os.Getenv(envModel)
	}
	if o.URL == "" {
		o.URL = os.Getenv(envProviderURL)
	}
	if o.Provider == "" {
		o.Provider = os.Getenv(envProvider)
	}
	if o.Provider == "" {
		o.Provider = "openai"
	}
	if o.Model == "" {
		return nil, nil
	}
	if c.Flags().Lookup("mcp") != nil {
		o.MCP, _ = c.Flags().GetStringArray("mcp")
		o.ContextWindow, _ = c.Flags().GetInt("context-window")
		o.MaxOutput, _ = c.Flags().GetInt("max-output")
	}
	k, err := providerKey()
	if err != nil {
		return nil, usageErr(err)
	}
	o.Key = k
	a := &taskwire.Action{Op: taskwire.OpStart, Agent: taskwire.AgentHarn, Harn: o, Workdir: wd}
	if c.Flags().Lookup("profile") != nil {
		if a.Grants, err = grantsOf(c); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// latestHarnSession is the live harn session of directory wd that was
// active last, "" for none.
func latestHarnSession(ctx context.Context, cl *client, wd string) string {
	cctx, cancel := context.WithTimeout(ctx, chatCallTimeout)
	defer cancel()
	res, err := cl.api.List(cctx, &api.ListRequest{})
	if err != nil {
		return ""
	}
	rows := res.GetRows()
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].GetLastEventAtUnixNano() > rows[j].GetLastEventAtUnixNano() })
	for _, r := range rows {
		if r.GetAgent() == taskwire.AgentHarn && strings.HasPrefix(r.GetSessionId(), "h-") && !r.GetEnded() && r.GetCwd() == wd {
			return r.GetSessionId()
		}
	}
	return ""
}

// ---- the bubbletea model ----

type historyMsg struct {
	r   taskwire.Result
	err error
}

type actionMsg struct {
	say     string
	err     error
	session string // a start: the new session
	owner   string
	queued  string // a follow-up: its task and text
	text    string
}

type childrenMsg struct{ rows []*api.SessionRow }

type retryMsg struct{}

// chatModel is the TUI's state: what it painted from the node, and the
// input line.
type chatModel struct {
	ctx     context.Context
	api     chatAPI
	start   *taskwire.Action // a new session's start, nil: none can be started
	session string
	owner   string // the node that owns the session
	since   int
	polling bool

	tr       *transcript
	view     *tasksView
	ctxLine  *taskwire.ContextInfo
	children []*api.SessionRow
	sent     map[string]string // follow-ups this TUI queued: task -> text

	input  []rune
	action string // which of the three happened (or an error)
	width  int
	height int
}

// tasksView is what the TUI keeps of the session's view.
type tasksView struct {
	running string
	state   string
	queue   []string
	texts   []string // each queued task's text, from the node ("" when it has none)
}

func (m *chatModel) Init() tea.Cmd {
	return tea.Batch(m.poll(), m.childrenCmd(0))
}

// call runs one task action at the owner; Cmds call it off the
// Update goroutine, so it takes what it needs as arguments.
func (m *chatModel) call(owner string, a taskwire.Action) (taskwire.Result, error) {
	ctx, cancel := context.WithTimeout(m.ctx, chatCallTimeout)
	defer cancel()
	return m.api.task(ctx, owner, a)
}

// poll reads the session's next events (a long poll at the owner).
func (m *chatModel) poll() tea.Cmd {
	if m.session == "" || m.polling {
		return nil
	}
	m.polling = true
	session, since, owner := m.session, m.since, m.owner
	return func() tea.Msg {
		r, err := m.call(owner, taskwire.Action{Op: taskwire.OpHistory, Session: session, Since: since, WaitMS: int(chatPollWait / time.Millisecond)})
		return historyMsg{r: r, err: err}
	}
}

func (m *chatModel) childrenCmd(after time.Duration) tea.Cmd {
	session := m.session
	if session == "" {
		return tea.Tick(chatChildrenEvery, func(time.Time) tea.Msg { return childrenMsg{} })
	}
	return tea.Tick(after, func(time.Time) tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, chatCallTimeout)
		defer cancel()
		rows, _ := m.api.children(ctx, session)
		return childrenMsg{rows: rows}
	})
}

// absorb takes one history answer.
func (m *chatModel) absorb(r taskwire.Result) {
	for _, e := range r.Events {
		m.tr.apply(e)
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
			v.running, v.state = r.View.Task.ID, string(r.View.Task.State)
		}
		for i, q := range r.View.Queue {
			v.queue = append(v.queue, q.ID)
			t := ""
			if i < len(r.QueueText) {
				t = r.QueueText[i]
			}
			v.texts = append(v.texts, t)
		}
	}
	m.view = v
}

func (m *chatModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case historyMsg:
		m.polling = false
		if msg.err != nil {
			m.action = "error: " + text.OneLine(userText(msg.err))
			return m, tea.Tick(chatRetry, func(time.Time) tea.Msg { return retryMsg{} })
		}
		m.absorb(msg.r)
		return m, m.poll()
	case retryMsg:
		return m, m.poll()
	case childrenMsg:
		m.children = msg.rows
		return m, m.childrenCmd(chatChildrenEvery)
	case actionMsg:
		if msg.err != nil {
			m.action = "error: " + text.OneLine(userText(msg.err))
		} else {
			m.action = msg.say
		}
		if msg.queued != "" && len(m.sent) < maxPending {
			m.sent[msg.queued] = msg.text
		}
		if msg.session != "" && m.session == "" {
			m.session, m.owner = msg.session, msg.owner
			return m, m.poll()
		}
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

// running is the task the keys act on: the one the node runs.
func (m *chatModel) running() string {
	if m.view != nil && m.view.running != "" {
		return m.view.running
	}
	return m.tr.running
}

func (m *chatModel) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "ctrl+c", "ctrl+d":
		return m, tea.Quit
	case "enter":
		return m, m.send(false)
	case "alt+enter", "tab":
		return m, m.send(true)
	case "esc":
		return m, m.abort()
	case "backspace":
		if len(m.input) > 0 {
			m.input = m.input[:len(m.input)-1]
		}
		return m, nil
	case "ctrl+u":
		m.input = m.input[:0]
		return m, nil
	}
	if k.Type == tea.KeySpace {
		m.input = append(m.input, ' ')
		return m, nil
	}
	if k.Type != tea.KeyRunes || k.Alt {
		return m, nil
	}
	if len(m.input) == 0 && len(m.tr.pending) > 0 && len(k.Runes) == 1 && (k.Runes[0] == 'y' || k.Runes[0] == 'n') {
		return m, m.answer(m.tr.pending[0], k.Runes[0] == 'y')
	}
	if len(m.input)+len(k.Runes) <= maxChatInput {
		m.input = append(m.input, k.Runes...)
	}
	return m, nil
}

// send sends the input line: Enter steers the running task (with the
// turn it saw, so a steer of an ended turn becomes a follow-up and says
// so); a follow-up queues after the running task; with no session yet
// either starts one.
func (m *chatModel) send(followUp bool) tea.Cmd {
	line := strings.TrimSpace(string(m.input))
	if line == "" {
		return nil
	}
	m.input = m.input[:0]
	if m.session == "" {
		if m.start == nil {
			m.action = "error: no session: name a model (--model M or " + envModel + ") to start one"
			return nil
		}
		a := *m.start
		a.Text = line
		m.action = "starting a session ..."
		return func() tea.Msg {
			r, err := m.call("", a)
			if err != nil {
				return actionMsg{err: err}
			}
			return actionMsg{say: "started session " + r.Session + " (task " + taskID(r) + ")", session: r.Session, owner: r.Node}
		}
	}
	session, running, owner := m.session, m.running(), m.owner
	if followUp || running == "" {
		m.action = "queueing a follow-up ..."
		return func() tea.Msg {
			r, err := m.call(owner, taskwire.Action{Op: taskwire.OpFollowUp, Session: session, Text: line})
			if err != nil {
				return actionMsg{err: err}
			}
			say := "follow-up " + taskID(r) + " queued"
			if r.Task != nil && r.Task.Position > 0 {
				say += fmt.Sprintf(" (position %d)", r.Task.Position)
			} else if !followUp {
				say = "no task was running: started " + taskID(r)
			}
			return actionMsg{say: say, queued: taskID(r), text: line}
		}
	}
	m.action = "steering ..."
	return func() tea.Msg {
		r, err := m.call(owner, taskwire.Action{Op: taskwire.OpSteer, Session: session, Task: running, Text: line})
		if err != nil {
			return actionMsg{err: err}
		}
		if r.Steer != nil && r.Steer.Mode == "follow_up" {
			return actionMsg{say: "steer became follow-up " + r.Steer.Task + ": " + text.OneLine(r.Steer.Message)}
		}
		return actionMsg{say: "steered " + running + ": delivered at the next step boundary"}
	}
}

// abort cancels the running task: its generation, running tools and
// pending calls stop through the barrier.
func (m *chatModel) abort() tea.Cmd {
	running, owner := m.running(), m.owner
	if running == "" {
		m.action = "nothing to abort: no task runs"
		return nil
	}
	m.action = "aborting " + running + " ..."
	return func() tea.Msg {
		r, err := m.call(owner, taskwire.Action{Op: taskwire.OpCancel, Task: running, Reason: "Esc in the TUI"})
		if err != nil {
			return actionMsg{err: err}
		}
		say := "aborted " + running
		if r.Interrupt != "" {
			say += ": " + text.OneLine(r.Interrupt)
		}
		return actionMsg{say: say}
	}
}

func (m *chatModel) answer(p pendingCall, allow bool) tea.Cmd {
	op, verb := taskwire.OpDeny, "denied"
	if allow {
		op, verb = taskwire.OpConfirm, "approved"
	}
	m.action = verb + " " + p.call + " ..."
	owner := m.owner
	return func() tea.Msg {
		if _, err := m.call(owner, taskwire.Action{Op: op, Task: p.task, Call: p.call, Reason: "answered in the TUI"}); err != nil {
			return actionMsg{err: err}
		}
		return actionMsg{say: verb + " " + clean(p.tool) + " (" + clean(p.call) + ")"}
	}
}

func taskID(r taskwire.Result) string {
	if r.Task == nil {
		return "?"
	}
	return r.Task.ID
}

// View paints the screen: the header, the transcript's tail, then the
// approvals, context, children, queue, last action, input and keys.
func (m *chatModel) View() string {
	var foot []string
	if len(m.tr.pending) > 0 {
		p := m.tr.pending[0]
		foot = append(foot, fmt.Sprintf("approve %s (%s) of %s? y/n  (%d waiting)", clean(p.tool), clean(p.call), clean(p.task), len(m.tr.pending)))
	}
	foot = append(foot, m.contextLine(), m.childrenLine(), m.queueLine(), "last: "+clean(m.action),
		"> "+clean(string(m.input))+"_",
		"Enter steer | Alt+Enter/Tab follow-up | Esc abort | y/n approve | Ctrl+C leave")
	head := "harn chat"
	if m.session != "" {
		head += " | session " + clean(m.session) + " on " + clean(m.owner)
	} else {
		head += " | no session yet: type a prompt"
	}
	if r := m.running(); r != "" {
		head += " | running " + clean(r)
	} else if m.tr.last != "" {
		head += " | idle (" + clean(m.tr.last) + " " + clean(m.tr.lastEnd) + ")"
	}
	rows := []string{head, strings.Repeat("-", max(min(m.width, 200), 10))}
	body := m.height - len(rows) - len(foot) - 1
	tail := m.tr.screenTail(m.width, body)
	for len(tail) < body {
		tail = append([]string{""}, tail...)
	}
	rows = append(rows, tail...)
	rows = append(rows, strings.Repeat("-", max(min(m.width, 200), 10)))
	for _, f := range foot {
		rows = append(rows, wrap(f, m.width)[0])
	}
	return strings.Join(rows, "\n")
}

func (m *chatModel) contextLine() string {
	c := m.ctxLine
	if c == nil {
		return "context: -"
	}
	s := fmt.Sprintf("context: %d / %d tokens", c.Used, c.Budget)
	if c.Budget > 0 {
		s += fmt.Sprintf(" (%d%%)", c.Used*100/c.Budget)
	}
	if c.Compaction != "" {
		s += " | compacted: " + clean(c.Compaction)
		if !c.CompactedAt.IsZero() {
			s += " at " + c.CompactedAt.Format("15:04:05")
		}
	} else {
		s += " | no compaction"
	}
	return s
}

func (m *chatModel) childrenLine() string {
	if len(m.children) == 0 {
		return "children: none"
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
		parts = append(parts, clean(text.Clip(r.GetSessionId(), 12))+" "+clean(r.GetAgent())+" "+clean(state))
	}
	return "children: " + strings.Join(parts, ", ")
}

func (m *chatModel) queueLine() string {
	if m.view == nil || len(m.view.queue) == 0 {
		return "queue: empty"
	}
	var parts []string
	for i, id := range m.view.queue {
		s := clean(id)
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
