package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-isatty"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// tableWidth is the width the roster table fits when the output is not a
// terminal (tableWidthOf): it cuts the task, then the project (and other
// free text) before it would cut a state.
const tableWidth = 120

// waitingOnMax bounds what a needs_input row says it waits on.
const waitingOnMax = 30

// Colours (SGR) of states on a terminal.
const (
	sgrAmber = "\x1b[33m"
	sgrGreen = "\x1b[32m"
	sgrCyan  = "\x1b[36m"
	sgrDim   = "\x1b[2m"
	sgrReset = "\x1b[0m"
)

// useColour reports whether w is a terminal that takes colour: a TTY,
// NO_COLOR unset or empty (no-color.org), and TERM not "dumb".
func useColour(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd())
}

// activityColour and taskColour are the SGR of a state word ("" for none).
func activityColour(word string) string {
	switch word {
	case string(presence.ActivityNeedsInput):
		return sgrAmber
	case string(presence.ActivityWorking):
		return sgrCyan
	case string(presence.ActivityIdle), string(presence.ActivityUnknown), "ended":
		return sgrDim
	}
	return ""
}

func taskColour(word string) string {
	switch word {
	case string(presence.TaskBlocked):
		return sgrAmber
	case string(presence.TaskDone):
		return sgrGreen
	}
	return ""
}

// cell is one table cell: safe text, of which the first keep runes are
// never cut (a state), and the colour of its first word.
type cell struct {
	s      string
	keep   int
	colour string
}

// column is a table column: its header, how narrow it may be cut, and
// whether it is padded (the last column is not).
type column struct {
	head  string
	floor int // cut no narrower than this (or the cells' keep)
}

// Roster table columns, and the order in which they give up width.
const (
	colID = iota
	colName
	colAgent
	colActivity
	colTask
	colLife
	colProject
	colLast
	colNode
	nCols
)

var rosterColumns = [nCols]column{
	colID: {"SESSION", 1 << 30}, colName: {"NAME", 8}, colAgent: {"AGENT", 6},
	colActivity: {"ACTIVITY", 0}, colTask: {"TASK", 12}, colLife: {"TASK STATE", 0},
	colProject: {"PROJECT", 10}, colLast: {"LAST", 1 << 30}, colNode: {"NODE", 10},
}

// shrinkOrder is which columns give up width first when the table is too
// wide: the task, then the project, then other free text; the states
// give up only their detail, never their word.
var shrinkOrder = []int{colTask, colProject, colName, colNode, colLife, colActivity, colAgent}

// safe is untrusted text made fit for one cell.
func safe(s string) string { return text.OneLine(s) }

// activityCell renders the ACTIVITY cell: the activity (or ended); for a
// needs_input row, how long it has waited and what it waits on; for a
// working row that has gone quiet, how long it has been silent.
func activityCell(r *rosterRow, now time.Time) cell {
	if r.Ended {
		return cell{s: "ended", keep: 5, colour: activityColour("ended")}
	}
	act := safe(r.Activity)
	c := cell{s: act, keep: utf8.RuneCountInString(act), colour: activityColour(act)}
	switch {
	case r.Activity == string(presence.ActivityNeedsInput):
		if at := r.activityAt(); !at.IsZero() {
			c.s += " " + text.Age(now, at)
			c.keep = utf8.RuneCountInString(c.s)
		}
		if q := peekQuestion(r.GetHosted()); q != "" {
			c.s += ": " + text.Clip(q, 2*waitingOnMax)
		} else if on := safe(r.WaitingOn); on != "" {
			c.s += ": " + text.Clip(on, waitingOnMax)
		}
	case r.silent():
		c.s += " · silent " + text.Age(now, r.silentSince())
		c.keep = utf8.RuneCountInString(c.s)
	}
	return c
}

// lifeCell renders the TASK STATE cell: the task state and, while
// blocked, its reason; an ended session shows ended.
func lifeCell(r *rosterRow) cell {
	if r.Ended {
		return cell{s: "ended", keep: 5, colour: activityColour("ended")}
	}
	ts := safe(r.TaskState)
	c := cell{s: ts, keep: utf8.RuneCountInString(ts), colour: taskColour(ts)}
	if reason := safe(r.BlockerReason); reason != "" {
		c.s += " (" + text.Clip(reason, 40) + ")"
	}
	return c
}

// nodeCell renders the NODE cell with the owner's reachability.
func nodeCell(r *rosterRow, now time.Time) cell {
	where := safe(r.Node)
	if where == "" {
		where = "-"
	}
	if !r.Reachable {
		where += " (unreachable"
		if since := r.unreachableSince(); !since.IsZero() {
			where += " " + text.Age(now, since)
		}
		where += ")"
	}
	return cell{s: where}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rosterCells renders sorted rows as cells, children under their parents.
func rosterCells(rows []*rosterRow, now time.Time) [][nCols]cell {
	ids := make([]string, len(rows))
	for i := range rows {
		ids[i] = rows[i].SessionId
	}
	handles := shortIDs(ids)
	order := treeOrder(rows)
	out := make([][nCols]cell, 0, len(order))
	for _, p := range order {
		r := rows[p.row]
		id := safe(handles[p.row])
		if p.depth > 0 {
			id = strings.Repeat("  ", p.depth-1) + "└ " + id
		}
		var cs [nCols]cell
		cs[colID] = cell{s: id, keep: utf8.RuneCountInString(id)}
		cs[colName] = cell{s: dash(safe(r.Name))}
		cs[colAgent] = cell{s: dash(safe(r.Agent))}
		cs[colActivity] = activityCell(r, now)
		cs[colLife] = lifeCell(r)
		cs[colTask] = taskCell(r)
		cs[colProject] = cell{s: dash(safe(r.project()))}
		cs[colLast] = cell{s: text.Ago(now, r.evidenceAt())}
		cs[colNode] = nodeCell(r, now)
		out = append(out, cs)
	}
	return out
}

// fitWidths returns each column's width: its widest cell, cut in
// shrinkOrder until the table fits width. A first pass cuts columns down
// to their floors; if that is not enough a second pass cuts the free-text
// columns further, down to hardFloor. A cell's kept prefix (a state) and
// a column whose floor is unbounded (the handle, the age) are never cut;
// so a table of very long states may stay wider than width.
func fitWidths(cols []column, rows [][nCols]cell, width int) []int {
	w := make([]int, len(cols))
	keep := make([]int, len(cols))
	for c := range cols {
		w[c] = utf8.RuneCountInString(cols[c].head)
		keep[c] = w[c] // headers are not cut either
	}
	for _, r := range rows {
		for c := range cols {
			w[c] = max(w[c], utf8.RuneCountInString(r[c].s))
			keep[c] = max(keep[c], r[c].keep)
		}
	}
	total := 2 * (len(cols) - 1)
	for _, x := range w {
		total += x
	}
	for pass := 0; pass < 2 && total > width; pass++ {
		for _, c := range shrinkOrder {
			if c >= len(cols) || total <= width {
				continue
			}
			floor := cols[c].floor
			if pass == 1 && floor < 1<<30 {
				floor = min(floor, hardFloor)
			}
			floor = max(floor, keep[c])
			if w[c] <= floor {
				continue
			}
			give := min(total-width, w[c]-floor)
			w[c] -= give
			total -= give
		}
	}
	return w
}

// hardFloor is how narrow a free-text column may be cut when cutting every
// column to its floor was not enough.
const hardFloor = 4

// writeTable writes cells under the headers, each cut to its column's
// width, padded with spaces; colour, when on, wraps only a cell's first
// word, so that padding and cutting count visible runes.
func writeTable(w io.Writer, cols []column, rows [][nCols]cell, widths []int, colour bool) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	line := func(cells []cell) {
		var b strings.Builder
		for c := range cols {
			s := cells[c].s
			if utf8.RuneCountInString(s) > widths[c] {
				if widths[c] <= cells[c].keep {
					// No room for "…" after the kept prefix: the
					// prefix alone, never a cut state.
					s = string([]rune(s)[:cells[c].keep])
				} else {
					s = text.Clip(s, widths[c])
				}
			}
			n := utf8.RuneCountInString(s)
			if colour && cells[c].colour != "" {
				word, rest := s, ""
				if i := strings.IndexByte(s, ' '); i >= 0 {
					word, rest = s[:i], s[i:]
				}
				b.WriteString(cells[c].colour + word + sgrReset + rest)
			} else {
				b.WriteString(s)
			}
			if c < len(cols)-1 {
				b.WriteString(strings.Repeat(" ", widths[c]-n+2))
			}
		}
		bw.WriteString(strings.TrimRight(b.String(), " "))
		bw.WriteByte('\n')
	}
	head := make([]cell, len(cols))
	for c := range cols {
		head[c] = cell{s: cols[c].head}
	}
	line(head)
	for _, r := range rows {
		line(r[:])
	}
	return bw.Flush()
}

// renderRoster writes the roster table of sorted rows, fit to width.
func renderRoster(w io.Writer, rows []*rosterRow, now time.Time, colour bool, width int) error {
	if len(rows) == 0 {
		_, err := io.WriteString(w, "no agent sessions\n")
		return err
	}
	cells := rosterCells(rows, now)
	widths := fitWidths(rosterColumns[:], cells, width)
	return writeTable(w, rosterColumns[:], cells, widths, colour)
}

// Bounds of the harn task marker.
const (
	taskIDTail  = 6  // the task id's last runes shown (its random part)
	taskWordMax = 12 // a state or status word
)

// harnTaskMarker is the TASK cell's prefix for a session with a harn task:
// "▶ t-…K3F9Q2 running (2 queued)"; a terminal task shows its status
// instead of the word terminal ("▶ t-…K3F9Q2 succeeded"). It is kept whole: the cell cuts only the text
// after it.
func harnTaskMarker(t *api.HarnTask) string {
	id := safe(t.Id)
	if r := []rune(id); len(r) > taskIDTail+2 {
		id = "t-…" + string(r[len(r)-taskIDTail:])
	}
	word := safe(t.State)
	if st := safe(t.Status); word == "terminal" && st != "" {
		word = st // a terminal task shows its status: succeeded, failed, cancelled, superseded
	}
	var b strings.Builder
	b.WriteString("▶ " + id + " " + text.Clip(dash(word), taskWordMax))
	if t.QueueDepth > 0 {
		fmt.Fprintf(&b, " (%d queued)", min(t.QueueDepth, 999))
	}
	return b.String()
}

// taskCell renders the TASK cell: the session's task, after its harn
// task's marker when it has one.
func taskCell(r *rosterRow) cell {
	if r.HarnTask == nil {
		return cell{s: dash(safe(r.Task))}
	}
	m := harnTaskMarker(r.HarnTask)
	c := cell{s: m, keep: utf8.RuneCountInString(m)}
	t := safe(r.Task)
	if t == "" {
		t = safe(r.HarnTask.Text)
	}
	if t != "" {
		c.s += ": " + t
	}
	return c
}

// peekQuestion is what a hosted terminal that waits for input shows: the
// last line of its peek with more than a prompt on it.
func peekQuestion(h *api.HostedView) string {
	if h == nil {
		return ""
	}
	for i := len(h.Peek) - 1; i >= 0; i-- {
		if l := safe(h.Peek[i]); len([]rune(l)) > 2 {
			return l
		}
	}
	return ""
}
