package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/glamour"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/harn-dev/harn/util/text"
)

// Bounds of a drawing.
const (
	// collapsedLines is how many lines of a call's diff or output show
	// until it is expanded.
	collapsedLines = 8
	// maxMarkdown bounds the answer text drawn as markdown; a longer one
	// is drawn as plain lines.
	maxMarkdown = 64 << 10
	// maxLine bounds one drawn line's bytes before it is wrapped.
	maxLine = 4096
)

// styles of the screen.
var (
	stUser    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("13"))
	stSteer   = lipgloss.NewStyle().Foreground(lipgloss.Color("14"))
	stDim     = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	stTool    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	stOK      = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	stBad     = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	stWarn    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11"))
	stAdd     = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	stDel     = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	stHunk    = lipgloss.NewStyle().Foreground(lipgloss.Color("14"))
	stHeader  = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("15")).Background(lipgloss.Color("57"))
	stBar     = lipgloss.NewStyle().Foreground(lipgloss.Color("7")).Background(lipgloss.Color("236"))
	stKeys    = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	stBoxWarn = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("11")).Padding(0, 1)
	stBox     = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("12")).Padding(0, 1)
)

// clean is untrusted text made one safe line: control characters out,
// bounded.
func clean(s string) string { return text.Clip(text.Sanitize(s), maxLine) }

// cleanLines is untrusted text made safe lines: split at newlines, tabs
// as four spaces, every control character out.
func cleanLines(s string) []string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\t", "    ")
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, p := range parts {
		parts[i] = clean(p)
	}
	return parts
}

// wrapLine cuts a drawn line (styles allowed) to rows of at most w cells.
func wrapLine(s string, w int) []string {
	if w < 1 || ansi.StringWidth(s) <= w {
		return []string{s}
	}
	return strings.Split(ansi.Hardwrap(s, w, true), "\n")
}

// indent wraps each line at w-len(pre) and puts pre before every row.
func indent(pre string, lines []string, w int) []string {
	var out []string
	pw := ansi.StringWidth(pre)
	for _, l := range lines {
		for _, r := range wrapLine(l, max(w-pw, 10)) {
			out = append(out, pre+r)
		}
	}
	return out
}

// markdown draws answers; one renderer per width.
type markdown struct {
	w  int
	tr *glamour.TermRenderer
}

func (md *markdown) render(src string, w int) []string {
	if md.tr == nil || md.w != w {
		tr, err := glamour.NewTermRenderer(glamour.WithStandardStyle("dark"), glamour.WithWordWrap(max(w-4, 20)),
			glamour.WithColorProfile(lipgloss.ColorProfile()))
		if err != nil {
			return nil
		}
		md.tr, md.w = tr, w
	}
	out, err := md.tr.Render(src)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.Trim(out, "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(ansi.Strip(lines[0])) == "" {
		lines = lines[1:]
	}
	return lines
}

// safeMarkdown is the model's text with every control character out
// (newlines and tabs kept), so that only the renderer's own sequences
// reach the terminal.
func safeMarkdown(s string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.ReplaceAll(s, "\t", "    "), "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(text.Sanitize(l))
	}
	return b.String()
}

// completeBlocks splits an answer being streamed at its last blank line
// outside a code fence: the part before is drawn as markdown, the rest as
// it comes.
func completeBlocks(s string) (done, rest string) {
	cut, fence := -1, false
	off := 0
	for _, l := range strings.SplitAfter(s, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
		}
		off += len(l)
		if t == "" && !fence && strings.HasSuffix(l, "\n") && off < len(s) {
			cut = off
		}
	}
	if cut < 0 {
		return "", s
	}
	return s[:cut], s[cut:]
}

// draw is the item's lines at width w (cached until it changes).
func (m *Model) draw(it *item, w int) []string {
	if it.drawn != nil && it.drawnVer == it.ver && it.drawnW == w && it.drawnIDs == m.ids.gen {
		return it.drawn
	}
	var out []string
	switch it.kind {
	case kUser:
		out = append(out, "")
		ls := cleanLines(it.text)
		first := stUser.Render("❯ "+ls[0]) + stDim.Render("  "+m.ids.short(it.task))
		out = append(out, wrapLine(first, w)...)
		out = append(out, indent("  ", styleAll(stUser, ls[1:]), w)...)
	case kSteer:
		ls := cleanLines(it.text)
		out = append(out, indent("", []string{stSteer.Render(fmt.Sprintf("↳ steer at step %d: ", it.step)) + stUser.Render(ls[0])}, w)...)
		out = append(out, indent("  ", styleAll(stUser, ls[1:]), w)...)
	case kText:
		out = m.drawText(it, w)
	case kNote:
		out = indent("  ", []string{stDim.Render("· " + clean(it.text))}, w)
	case kEnd:
		st := stDim
		if it.status != "succeeded" {
			st = stBad
		}
		line := "── " + m.ids.short(it.task) + " " + clean(it.status)
		if n := len(it.refused); n > 0 {
			// the outcome says the task did not do all it was asked
			st = stBad
			line += fmt.Sprintf(" · %d %s refused (%s)", n, map[bool]string{true: "call", false: "calls"}[n == 1], clean(text.Clip(strings.Join(it.refused, ", "), 120)))
		}
		out = []string{st.Render(line + " ──")}
	case kTool:
		out = m.drawTool(it, w)
	}
	m.ids.short(it.task) // learnt before the stamp: a drawing is not made again for its own id
	it.drawn, it.drawnVer, it.drawnW, it.drawnIDs = out, it.ver, w, m.ids.gen
	return out
}

func styleAll(st lipgloss.Style, ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = st.Render(l)
	}
	return out
}

func (m *Model) drawText(it *item, w int) []string {
	done, rest := it.text, ""
	if !it.done {
		done, rest = completeBlocks(it.text)
	}
	var out []string
	if done != "" {
		var md []string
		if len(done) <= maxMarkdown {
			md = m.md.render(safeMarkdown(done), w)
		}
		if md == nil {
			md = indent("  ", cleanLines(done), w)
		}
		out = append(out, md...)
	}
	if strings.TrimSpace(rest) != "" {
		out = append(out, indent("  ", cleanLines(rest), w)...)
	}
	if it.status != "" && it.status != "succeeded" {
		out = styleAll(stBad, out)
	}
	return out
}

// args is a call's arguments as an object (nil when they do not parse:
// cut at their bound, or not an object).
func argsOf(s string) map[string]any {
	var v map[string]any
	if json.Unmarshal([]byte(s), &v) != nil {
		return nil
	}
	return v
}

func str(v map[string]any, k string) string {
	s, _ := v[k].(string)
	return s
}

// summary is the call's arguments in one line: the command of a shell,
// the path of a file tool, the pattern of a search, else the arguments.
func summary(tool, args string) string {
	a := argsOf(args)
	if a == nil {
		return clean(text.OneLine(args))
	}
	switch tool {
	case "shell":
		ls := strings.Split(strings.TrimSpace(str(a, "command")), "\n")
		s := "$ " + clean(ls[0])
		if len(ls) > 1 {
			s += fmt.Sprintf(" … (+%d lines)", len(ls)-1)
		}
		return s
	case "read":
		s := clean(str(a, "path"))
		if off, ok := a["offset"].(float64); ok {
			s += fmt.Sprintf(" from line %d", int(off))
		}
		return s
	case "write":
		return clean(str(a, "path")) + fmt.Sprintf(" (%d lines)", strings.Count(strings.TrimSuffix(str(a, "content"), "\n"), "\n")+1)
	case "edit":
		return clean(str(a, "path"))
	case "grep":
		s := clean(str(a, "pattern"))
		if p := str(a, "path"); p != "" {
			s += " in " + clean(p)
		}
		if g := str(a, "glob"); g != "" {
			s += " (" + clean(g) + ")"
		}
		return s
	case "glob":
		return clean(str(a, "pattern"))
	}
	b, _ := json.Marshal(a)
	return clean(string(b))
}

// stateMark is a call's state drawn.
func stateMark(state string) string {
	switch state {
	case "succeeded":
		return stOK.Render("✓")
	case "running":
		return stWarn.Render("… running")
	case "waits for approval":
		return stWarn.Render("? waits for approval (y/n)")
	case "":
		return ""
	}
	return stBad.Render("✗ " + clean(state))
}

// diffLines are a diff's lines, coloured by their first character.
func diffLines(d string) []string {
	var out []string
	for _, l := range cleanLines(d) {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			out = append(out, stDim.Render(l))
		case strings.HasPrefix(l, "+"):
			out = append(out, stAdd.Render(l))
		case strings.HasPrefix(l, "-"):
			out = append(out, stDel.Render(l))
		case strings.HasPrefix(l, "@@"):
			out = append(out, stHunk.Render(l))
		default:
			out = append(out, l)
		}
	}
	return out
}

// collapse is ls cut to collapsedLines unless expanded, with a line that
// says how many more there are.
func collapse(ls []string, expanded bool) []string {
	if expanded || len(ls) <= collapsedLines {
		return ls
	}
	n, s := len(ls)-collapsedLines, "s"
	if n == 1 {
		s = ""
	}
	return append(ls[:collapsedLines:collapsedLines], stDim.Render(fmt.Sprintf("… %d more line%s (ctrl+o or a click expands)", n, s)))
}

func (m *Model) drawTool(it *item, w int) []string {
	head := stTool.Render("● "+clean(it.tool)) + " " + summary(it.tool, it.args)
	if mark := stateMark(it.state); mark != "" {
		head += "  " + mark
	}
	out := wrapLine(head, w)
	var body []string
	if it.diff != "" && (it.tool == "write" || it.tool == "edit") {
		body = append(body, collapse(diffLines(it.diff), it.expanded)...)
	}
	if o := strings.TrimRight(it.output, "\n"); o != "" && it.state != "running" {
		ls := cleanLines(o)
		if it.state != "succeeded" {
			ls = styleAll(stBad, ls)
		}
		body = append(body, collapse(ls, it.expanded)...)
	}
	out = append(out, indent(stDim.Render("  │ "), body, w)...)
	return out
}
