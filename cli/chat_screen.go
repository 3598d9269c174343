//go:build !harn_hook

package cli

import (
	"fmt"
	"strings"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/text"
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

// The transcript of `harn chat`: a harn session's loop events, read from
// the node in order, folded into screen lines. It is a pure function of
// the events, so that a TUI run again paints the same screen from the
// node's history. Every text from the node (the model's, a tool's, a
// prompt) is sanitized here, before it can reach the terminal.

// Bounds of a transcript.
const (
	// maxChatLines bounds the lines kept; past it the oldest quarter goes.
	maxChatLines = 50_000
	// maxChatLine bounds one line's bytes (a longer one is clipped).
	maxChatLine = 4096
	// maxPending bounds the approvals waiting on screen.
	maxPending = 64
)

// pendingCall is a tool call that waits for an approval (y/n).
type pendingCall struct {
	task, call, tool string
}

// transcript is the screen's lines and what they say about the session.
type transcript struct {
	base  int      // the absolute index of lines[0]
	lines []string // sanitized, one screen line each (not yet wrapped)

	open     strings.Builder // the streaming line in progress
	openSet  bool
	streamed map[string]bool // tasks whose answer came as streamed text

	tools   map[string]int    // call -> absolute index of its line
	names   map[string]string // call -> its tool
	pending []pendingCall

	running string // the running task, "" when none
	last    string // the task that ended last, and how
	lastEnd string
}

func newTranscript() *transcript {
	return &transcript{streamed: map[string]bool{}, tools: map[string]int{}, names: map[string]string{}}
}

// clean is untrusted text made one safe screen line.
func clean(s string) string { return text.Clip(text.Sanitize(s), maxChatLine) }

func (t *transcript) add(s string) {
	if len(t.lines) >= maxChatLines {
		drop := maxChatLines / 4
		t.lines = append(t.lines[:0], t.lines[drop:]...)
		t.base += drop
		for k, i := range t.tools {
			if i < t.base {
				delete(t.tools, k)
			}
		}
	}
	t.lines = append(t.lines, s)
}

// set rewrites the line at absolute index i, when it is still kept.
func (t *transcript) set(i int, s string) bool {
	if i < t.base || i >= t.base+len(t.lines) {
		return false
	}
	t.lines[i-t.base] = s
	return true
}

// flush ends the streaming line.
func (t *transcript) flush() {
	if t.openSet {
		t.add("  " + clean(t.open.String()))
		t.open.Reset()
		t.openSet = false
	}
}

// stream adds a streamed text delta: each newline ends a line.
func (t *transcript) stream(s string) {
	for {
		before, after, nl := strings.Cut(s, "\n")
		if t.open.Len() < maxChatLine {
			t.open.WriteString(before)
		}
		t.openSet = true
		if !nl {
			return
		}
		t.flush()
		s = after
	}
}

// lineCount is the number of lines, the streaming one included.
func (t *transcript) lineCount() int {
	n := len(t.lines)
	if t.openSet {
		n++
	}
	return n
}

// tail is the last n lines, the streaming one included.
func (t *transcript) tail(n int) []string {
	all := t.lines
	if t.openSet {
		all = append(all[:len(all):len(all)], "  "+clean(t.open.String()))
	}
	if n < len(all) {
		all = all[len(all)-n:]
	}
	return all
}

func (t *transcript) toolLine(call, tool, state string) {
	s := fmt.Sprintf("  [tool] %s (%s): %s", clean(tool), clean(call), state)
	if i, ok := t.tools[call]; ok && t.set(i, s) {
		return
	}
	t.tools[call] = t.base + len(t.lines)
	t.add(s)
}

func (t *transcript) unpend(call string) {
	for i, p := range t.pending {
		if p.call == call {
			t.pending = append(t.pending[:i], t.pending[i+1:]...)
			return
		}
	}
}

// apply folds one loop event into the transcript.
func (t *transcript) apply(e taskwire.Event) {
	if e.Type != evText {
		t.flush()
	}
	switch e.Type {
	case evTurnStart:
		t.running = e.Task
		t.add("")
		t.add("you> " + clean(text.OneLine(e.Text)) + "   [" + clean(e.Task) + "]")
	case evText:
		t.streamed[e.Task] = true
		t.stream(e.Text)
	case evStatus:
		t.add("  . " + clean(e.Text))
	case evToolPre:
		t.names[e.Call] = e.Tool
		t.unpend(e.Call)
		t.toolLine(e.Call, e.Tool, "running")
	case evToolPost:
		t.unpend(e.Call)
		t.toolLine(e.Call, e.Tool, clean(e.Outcome))
	case evToolRefused:
		t.toolLine(e.Call, e.Tool, "refused: "+clean(text.OneLine(e.Text)))
	case evInputRequested:
		t.toolLine(e.Call, e.Tool, "waits for approval (y/n)")
		if len(t.pending) < maxPending {
			t.pending = append(t.pending, pendingCall{task: e.Task, call: e.Call, tool: e.Tool})
		}
	case evSteer:
		if e.Status == steerDelivered && e.Step > 0 {
			t.add(fmt.Sprintf("you (steer, at step %d)> %s", e.Step, clean(text.OneLine(e.Text))))
		} else {
			t.add("  . " + clean(text.OneLine(e.Text)))
		}
	case evTurnEnd:
		if !t.streamed[e.Task] || e.Status != "succeeded" {
			for _, l := range strings.Split(e.Text, "\n") {
				if strings.TrimSpace(l) != "" {
					t.add("  " + clean(l))
				}
			}
		}
		delete(t.streamed, e.Task)
		t.add("-- " + clean(e.Task) + " " + clean(e.Status))
		for i := 0; i < len(t.pending); {
			if t.pending[i].task == e.Task {
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

// wrap cuts s into lines of at most w runes (w < 1: no cut).
func wrap(s string, w int) []string {
	if w < 1 {
		return []string{s}
	}
	r := []rune(s)
	if len(r) <= w {
		return []string{s}
	}
	var out []string
	for len(r) > w {
		out = append(out, string(r[:w]))
		r = r[w:]
	}
	return append(out, string(r))
}

// screenTail is the last h screen rows of the transcript at width w.
func (t *transcript) screenTail(w, h int) []string {
	if h <= 0 {
		return nil
	}
	// Lines wrap to one row or more: h lines are always enough.
	src := t.tail(h)
	var rows []string
	for _, l := range src {
		rows = append(rows, wrap(l, w)...)
	}
	if len(rows) > h {
		rows = rows[len(rows)-h:]
	}
	return rows
}
