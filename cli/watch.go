package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	xterm "github.com/charmbracelet/x/term"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/cobra"

	"github.com/mattn/go-isatty"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// `harn agents list --watch`: the roster kept on screen. On a terminal it
// is a full-screen table (bubbletea) that repaints in place; elsewhere it
// prints one JSON line per change. Both poll the local node's List, one
// call at a time, each bounded, every --interval.

// Watch defaults and bounds.
const (
	defaultWatchInterval = 500 * time.Millisecond
	minWatchInterval     = 100 * time.Millisecond
	// watchCallTimeout bounds one List call of a watch.
	watchCallTimeout = 5 * time.Second
)

// addWatchFlags adds --watch and --interval to `agents list`.
func addWatchFlags(c *cobra.Command) {
	c.Flags().Bool("watch", false, "keep the roster on screen, updated in place (q quits); without a terminal, or with --json, print one JSON line per change")
	c.Flags().Duration("interval", defaultWatchInterval, "with --watch: how often to read the roster")
}

// watching reports whether `agents list` was asked to watch.
func watching(c *cobra.Command) bool {
	w, _ := c.Flags().GetBool("watch")
	return w
}

// rosterFetch reads the roster entries from the node.
type rosterFetch func(ctx context.Context) ([]*api.SessionRow, *api.ReadInfo, error)

// runWatch runs `agents list --watch` until q, ctrl-c, SIGINT or SIGTERM.
func runWatch(c *cobra.Command, all, consistent bool, f listFilter) error {
	every, _ := c.Flags().GetDuration("interval")
	if every < minWatchInterval {
		return hook.UsageErr(fmt.Errorf("--interval %s: give at least %s", every, minWatchInterval))
	}
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := hook.PlaceOf(c)
	cl, err := connect(ctx, p, 5*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	fetch := func(ctx context.Context) ([]*api.SessionRow, *api.ReadInfo, error) {
		res, err := cl.api.List(ctx, &api.ListRequest{All: all, Consistent: consistent})
		if err != nil {
			return nil, nil, hook.RpcErr(err, p)
		}
		return res.GetRows(), res.GetRead(), nil
	}
	out := c.OutOrStdout()
	if hook.AsJSON(c) || !isTerminal(out) {
		return watchJSON(ctx, out, c.ErrOrStderr(), fetch, every, silenceAfter(c), f)
	}
	m := newWatchModel(ctx, fetch, every, silenceAfter(c), useColour(out))
	m.filter = f
	m.act = clientActor{cl: cl, p: p}
	// The terminal's size from the start: a frame painted before the first
	// WindowSizeMsg at the default width wraps in a narrower terminal and
	// leaves stale lines below the next one.
	if f, ok := out.(*os.File); ok {
		if w, h, err := xterm.GetSize(f.Fd()); err == nil && w > 0 && h > 0 {
			m.width, m.height = w, h
		}
	}
	prog := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx), tea.WithOutput(out))
	_, err = prog.Run()
	if errors.Is(err, tea.ErrProgramKilled) || errors.Is(err, tea.ErrInterrupted) || errors.Is(err, context.Canceled) {
		return nil // a signal ended it
	}
	return err
}

// ---- without a terminal: one JSON line per change ----

// changeFeed remembers the JSON of each session last printed, to print
// only what changed.
type changeFeed struct {
	last map[string][]byte
}

// removedJSON is the line printed when a session leaves the roster.
type removedJSON struct {
	SessionID string `json:"session_id"`
	Removed   bool   `json:"removed"`
}

// changes returns the lines to print for a new roster (sorted rows): each
// session whose roster JSON differs from the last printed (all of them
// the first time), in the rows' order, then one removed line for each
// session no longer listed, in id order.
func (f *changeFeed) changes(rows []*rosterRow) ([][]byte, error) {
	if f.last == nil {
		f.last = map[string][]byte{}
	}
	var out [][]byte
	seen := make(map[string]bool, len(rows))
	for _, r := range rows {
		var line bytes.Buffer
		bw := bufio.NewWriter(&line)
		if err := r.writeJSON(bw); err != nil {
			return nil, fmt.Errorf("cli: roster row %s from the node: %w", safe(r.SessionId), err)
		}
		bw.Flush()
		seen[r.SessionId] = true
		if prev, ok := f.last[r.SessionId]; ok && bytes.Equal(prev, line.Bytes()) {
			continue
		}
		f.last[r.SessionId] = line.Bytes()
		out = append(out, line.Bytes())
	}
	var gone []string
	for id := range f.last {
		if !seen[id] {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	for _, id := range gone {
		delete(f.last, id)
		b, _ := json.Marshal(removedJSON{SessionID: id, Removed: true})
		out = append(out, b)
	}
	return out, nil
}

// watchJSON polls the roster every interval and writes the changed
// sessions as JSON lines to out, until ctx ends. A failed read is said
// once on errOut (until reads work again) and retried.
func watchJSON(ctx context.Context, out, errOut io.Writer, fetch rosterFetch, every, silence time.Duration, filter listFilter) error {
	var feed changeFeed
	lastErr := ""
	timer := hook.Clk.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C():
		}
		lines, err := pollChanges(ctx, fetch, &feed, silence, filter)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if msg := text.OneLine(err.Error()); msg != lastErr {
				fmt.Fprintf(errOut, "harn: watch: %s; retrying every %s\n", msg, every)
				lastErr = msg
			}
		default:
			lastErr = ""
			if err := writeLines(out, lines); err != nil {
				return fmt.Errorf("cli: watch output: %w", err)
			}
		}
		timer.Reset(every)
	}
}

// pollChanges reads the roster once and returns the lines for what
// changed.
func pollChanges(ctx context.Context, fetch rosterFetch, feed *changeFeed, silence time.Duration, filter listFilter) ([][]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, watchCallTimeout)
	defer cancel()
	entries, _, err := fetch(cctx)
	if err != nil {
		return nil, err
	}
	rows, err := decodeRoster(entries, hook.Clk.Now(), silence)
	if err != nil {
		return nil, err
	}
	return feed.changes(filter.apply(rows))
}

// writeLines writes lines in one write, each ended by a newline.
func writeLines(w io.Writer, lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

// ---- on a terminal: the live table ----

// snapshotMsg is one roster read.
type snapshotMsg struct {
	rows []*rosterRow
	info *api.ReadInfo
	at   time.Time
	err  error
}

// pollMsg asks for the next read.
type pollMsg struct{}

// watchModel is the bubbletea model of the live table.
type watchModel struct {
	ctx     context.Context
	fetch   rosterFetch
	every   time.Duration
	silence time.Duration
	colour  bool
	now     func() time.Time
	filter  listFilter

	rows   []*rosterRow
	info   *api.ReadInfo
	at     time.Time // of the last good read
	err    error     // of the last read, if it failed
	loaded bool
	width  int
	height int
	top    int // the first row shown (scrolling)

	// The actions on the selected row (watch_acts.go).
	act       watchActor
	sel       int    // the selected row
	selID     string // its session, kept across reads
	mode      watchMode
	confirm   watchConfirm
	input     string // the steer line being typed
	busy      bool   // an action is under way
	status    string // the last action's result or refusal
	statusErr bool
}

func newWatchModel(ctx context.Context, fetch rosterFetch, every, silence time.Duration, colour bool) watchModel {
	return watchModel{ctx: ctx, fetch: fetch, every: every, silence: silence, colour: colour, now: time.Now}
}

// Init starts the first read.
func (m watchModel) Init() tea.Cmd { return m.read }

// read is the command that reads the roster once, bounded.
func (m watchModel) read() tea.Msg {
	ctx, cancel := context.WithTimeout(m.ctx, watchCallTimeout)
	defer cancel()
	entries, info, err := m.fetch(ctx)
	now := m.now()
	if err != nil {
		return snapshotMsg{at: now, err: err}
	}
	rows, err := decodeRoster(entries, now, m.silence)
	return snapshotMsg{rows: m.filter.apply(rows), info: info, at: now, err: err}
}

// Update takes reads, window sizes and keys.
func (m watchModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if next, cmd, ok := m.updateAct(msg); ok {
		return next, cmd
	}
	switch msg := msg.(type) {
	case snapshotMsg:
		m.loaded = true
		m.err = msg.err
		if msg.err == nil {
			m.rows, m.info, m.at = msg.rows, msg.info, msg.at
			m.reselect()
		}
		return m, tea.Tick(m.every, func(time.Time) tea.Msg { return pollMsg{} })
	case pollMsg:
		if m.fetch == nil {
			return m, nil
		}
		return m, m.read
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

// page is how many rows fit on the screen.
func (m watchModel) page() int {
	if m.height <= 0 {
		return 1 << 30
	}
	return max(1, m.height-6) // title, table header, hidden count, footer, status, help
}

// Styles of the frame around the table.
var (
	watchTitle = lipgloss.NewStyle().Bold(true)
	watchDim   = lipgloss.NewStyle().Faint(true)
	watchWarn  = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
)

// View draws the title, the roster table (the same cells, order, handles
// and silence marker as `agents list`) and a footer.
func (m watchModel) View() string {
	var b strings.Builder
	width := m.width
	if width <= 0 {
		width = tableWidth
	}
	now := m.now()
	need := 0
	for _, r := range m.rows {
		if !r.Ended && (r.Activity == string(presence.ActivityNeedsInput) || r.TaskState == string(presence.TaskBlocked)) {
			need++
		}
	}
	title := fmt.Sprintf("harn agents · %d sessions", len(m.rows))
	if need > 0 {
		title += fmt.Sprintf(" · %d need you", need)
	}
	if !m.at.IsZero() {
		title += " · " + m.at.Local().Format("15:04:05")
	}
	clip := lipgloss.NewStyle().MaxWidth(width)
	b.WriteString(clip.Render(m.style(watchTitle, title)))
	b.WriteByte('\n')

	var lines []string
	switch {
	case m.mode == modeDetail:
		lines = strings.Split(strings.TrimRight(m.detailText(), "\n"), "\n")
	case m.mode == modeConfirm && len(m.confirm.facts) > 0:
		lines = m.factsView(width)
	case !m.loaded:
		lines = []string{"reading the roster…"}
	case len(m.rows) == 0 && m.err == nil:
		lines = []string{"no agent sessions"}
	case len(m.rows) > 0:
		var tb strings.Builder
		cells := rosterCells(m.rows, now)
		_ = writeTable(&tb, rosterColumns[:], cells, fitWidths(rosterColumns[:], cells, width-2), m.colour)
		all := strings.Split(strings.TrimRight(tb.String(), "\n"), "\n")
		lines = append(lines, "  "+all[0])
		body := all[1:]
		top := min(m.top, max(0, len(body)-1))
		end := min(len(body), top+m.page())
		for i := top; i < end; i++ {
			mark := "  "
			if i == m.sel {
				mark = "> "
			}
			lines = append(lines, mark+body[i])
		}
		if hidden := len(body) - (end - top); hidden > 0 {
			lines = append(lines, m.style(watchDim, fmt.Sprintf("%d more rows (↑/↓ scroll)", hidden)))
		}
	}
	for _, l := range lines {
		b.WriteString(clip.Render(l))
		b.WriteByte('\n')
	}

	var foot []string
	if m.err != nil {
		foot = append(foot, m.style(watchWarn, "cannot read the roster: "+text.Clip(safe(m.err.Error()), max(20, width-40))+"; retrying"))
	}
	if m.info.GetStale() {
		foot = append(foot, m.style(watchWarn, "stale read: no word from a leader for "+safe(orDash(m.info.GetLastContact()))))
	}
	if len(foot) > 0 {
		b.WriteString(strings.Join(foot, " · "))
		b.WriteByte('\n')
	}
	for i, l := range m.statusLines(width) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(clip.Render(l))
	}
	return b.String()
}

// style renders s in st when colour is on, else plain.
func (m watchModel) style(st lipgloss.Style, s string) string {
	if !m.colour {
		return s
	}
	return st.Render(s)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// isTerminalIn reports whether r is a terminal.
func isTerminalIn(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
