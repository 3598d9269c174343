package tui

import (
	"time"

	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// The loop's event types (runtime/agent's Ev... names) the screen folds.
const (
	evTurnStart      = "turn.start"
	evStatus         = "status"
	evText           = "text"
	evToolPre        = "tool.pre"
	evToolPost       = "tool.post"
	evToolRefused    = "tool.refused"
	evInputRequested = "input.requested"
	evSteer          = "steer"
	evTurnEnd        = "turn.end"
	steerDelivered   = "delivered"
)

// Bounds of a transcript.
const (
	// maxItems bounds the items kept; past it the oldest quarter goes.
	maxItems = 20_000
	// maxItemText bounds one item's text (an answer, a prompt); the rest
	// is dropped and the item says so.
	maxItemText = 1 << 20
	// maxPending bounds the approvals waiting on screen.
	maxPending = 64
	// maxPrompts bounds the prompts kept for input history.
	maxPrompts = 500
)

// The kinds of an item.
type kind int

const (
	kUser  kind = iota // a prompt (a turn's start)
	kSteer             // a steer delivered at a step boundary
	kText              // the model's answer (markdown)
	kTool              // one tool call
	kNote              // a status line
	kEnd               // a turn's end
)

// item is one block of the transcript. Its text fields are untrusted, as
// the node served them; they are sanitized when drawn.
type item struct {
	kind   kind
	task   string
	text   string // prompt, steer, answer, note text
	step   int
	done   bool // kText: complete (a later event followed, or the turn ended)
	status string

	// kTool
	call, tool, args, diff, output, state string
	waiting                               bool      // waits for an approval
	asked                                 time.Time // when the approval was asked

	// kEnd: the turn's tool calls the runtime refused (their tools):
	// the outcome's note, it did not do all it was asked
	refused []string

	expanded bool // drawn whole, not collapsed

	// the drawing, cached for a width, a version and the ids known
	// (a task's short id grows when a later task shares its prefix)
	ver, drawnVer, drawnW, drawnIDs int
	drawn                           []string
}

func (it *item) touch() { it.ver++ }

// transcript is a session's loop events, read from the node in order,
// folded into items. It is a pure function of the events (expansion
// aside), so that a TUI run again paints the same screen.
type transcript struct {
	items    []*item
	tools    map[string]*item // call -> its item
	open     *item            // the answer being streamed
	streamed map[string]bool  // tasks whose answer came as streamed text
	pending  []*item          // tool items waiting for an approval, oldest first
	prompts  []string         // the prompts and steers, oldest first
	tasks    []string         // every task seen
	ver      int              // counts changes

	running string // the running task, "" when none
	last    string // the task that ended last, and how
	lastEnd string
}

func newTranscript() *transcript {
	return &transcript{tools: map[string]*item{}, streamed: map[string]bool{}}
}

func (t *transcript) add(it *item) {
	if len(t.items) >= maxItems {
		drop := maxItems / 4
		for _, old := range t.items[:drop] {
			if old.kind == kTool && t.tools[old.call] == old {
				delete(t.tools, old.call)
			}
		}
		t.items = append(t.items[:0], t.items[drop:]...)
	}
	t.items = append(t.items, it)
}

func clipText(s string) string {
	if len(s) <= maxItemText {
		return s
	}
	return s[:maxItemText] + "\n\n[the rest is not shown: over 1 MiB]"
}

func (t *transcript) prompt(s string) {
	if len(t.prompts) >= maxPrompts {
		t.prompts = append(t.prompts[:0], t.prompts[maxPrompts/4:]...)
	}
	t.prompts = append(t.prompts, s)
}

// closeText ends the answer being streamed.
func (t *transcript) closeText() {
	if t.open != nil {
		t.open.done = true
		t.open.touch()
		t.open = nil
	}
}

func (t *transcript) tool(e taskwire.Event) *item {
	it := t.tools[e.Call]
	if it == nil {
		it = &item{kind: kTool, task: e.Task, call: e.Call, tool: e.Tool, step: e.Step}
		t.tools[e.Call] = it
		t.add(it)
	}
	if e.Args != "" {
		it.args = e.Args
	}
	if e.Diff != "" {
		it.diff = e.Diff
	}
	it.touch()
	return it
}

func (t *transcript) unpend(it *item) {
	it.waiting = false
	for i, p := range t.pending {
		if p == it {
			t.pending = append(t.pending[:i], t.pending[i+1:]...)
			return
		}
	}
}

// apply folds one loop event into the transcript.
func (t *transcript) apply(e taskwire.Event) {
	t.ver++
	if e.Type != evText {
		t.closeText()
	}
	if e.Task != "" && (len(t.tasks) == 0 || t.tasks[len(t.tasks)-1] != e.Task) {
		if len(t.tasks) >= maxItems {
			t.tasks = t.tasks[maxItems/4:]
		}
		t.tasks = append(t.tasks, e.Task)
	}
	switch e.Type {
	case evTurnStart:
		t.running = e.Task
		t.add(&item{kind: kUser, task: e.Task, text: clipText(e.Text)})
		t.prompt(e.Text)
	case evText:
		t.streamed[e.Task] = true
		if t.open == nil || t.open.task != e.Task {
			t.open = &item{kind: kText, task: e.Task}
			t.add(t.open)
		}
		if len(t.open.text) < maxItemText {
			t.open.text = clipText(t.open.text + e.Text)
		}
		t.open.touch()
	case evStatus:
		t.add(&item{kind: kNote, task: e.Task, text: e.Text})
	case evToolPre:
		it := t.tool(e)
		t.unpend(it)
		it.state = "running"
	case evToolPost:
		it := t.tool(e)
		t.unpend(it)
		it.state, it.output = e.Outcome, e.Output
	case evToolRefused:
		it := t.tool(e)
		t.unpend(it)
		it.state, it.output = "refused", e.Text
	case evInputRequested:
		it := t.tool(e)
		it.state = "waits for approval"
		if !it.waiting && len(t.pending) < maxPending {
			it.waiting, it.asked = true, e.At
			t.pending = append(t.pending, it)
		}
	case evSteer:
		if e.Status == steerDelivered && e.Step > 0 {
			t.add(&item{kind: kSteer, task: e.Task, text: clipText(e.Text), step: e.Step})
			t.prompt(e.Text)
		} else {
			t.add(&item{kind: kNote, task: e.Task, text: e.Text})
		}
	case evTurnEnd:
		if (!t.streamed[e.Task] || e.Status != "succeeded") && e.Text != "" {
			t.add(&item{kind: kText, task: e.Task, text: clipText(e.Text), done: true, status: e.Status})
		}
		delete(t.streamed, e.Task)
		t.add(&item{kind: kEnd, task: e.Task, status: e.Status, refused: t.refusedOf(e.Task)})
		for i := 0; i < len(t.pending); {
			if t.pending[i].task == e.Task {
				t.pending[i].waiting = false
				t.pending = append(t.pending[:i], t.pending[i+1:]...)
				continue
			}
			i++
		}
		if t.running == e.Task {
			t.running = ""
		}
		t.last, t.lastEnd = e.Task, e.Status
	}
}

// lastTool is the newest tool call, nil when none.
func (t *transcript) lastTool() *item {
	for i := len(t.items) - 1; i >= 0; i-- {
		if t.items[i].kind == kTool {
			return t.items[i]
		}
	}
	return nil
}

// refusedOf is the tools of the task's calls the runtime refused, in order.
func (t *transcript) refusedOf(task string) []string {
	var out []string
	for _, it := range t.items {
		if it.kind == kTool && it.task == task && it.state == "refused" {
			out = append(out, it.tool)
		}
	}
	return out
}
