// Package text renders untrusted and human-facing strings: it strips control
// characters (so that agent or network text can never write escape sequences
// to an operator's terminal), folds text onto one line, clips it to a width,
// and renders ages. It holds no state.
package text

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Sanitize returns s with every control character removed (C0, DEL and C1,
// so ESC, CSI, OSC, BEL and CR) and invalid UTF-8 replaced with U+FFFD.
// Newlines and tabs become spaces. It is the last step before any untrusted
// text reaches a terminal.
func Sanitize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || isBidi(r):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isBidi reports the explicit bidirectional formatting characters, which can
// make a terminal show text in an order other than its bytes.
func isBidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// OneLine sanitizes s and collapses its runs of white space into one space.
func OneLine(s string) string {
	return strings.Join(strings.Fields(Sanitize(s)), " ")
}

// FirstLine is the first line of s (s trimmed of surrounding
// white space, then cut at its first newline), sanitized and folded as
// OneLine does: the one line an error message shows on a terminal, whatever
// agent or network text it quotes after its first line.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return OneLine(s)
}

// Clip cuts s to at most n runes, ending a cut string with "…".
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Cell renders s for one cell of a markdown-style table: one safe line with
// no pipe, or "-" when empty.
func Cell(s string) string {
	s = OneLine(s)
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(s, "|", "/")
}

// Age renders the time since t compactly (45s, 12m, 3h, 2d), or "-" for a
// zero t. A t after now renders as 0s.
func Age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// Ago renders the time since t for people ("3m ago", "just now"), or "-"
// for a zero t.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if now.Sub(t) < time.Second {
		return "just now"
	}
	return Age(now, t) + " ago"
}

// Lines sanitizes s line by line and keeps its line breaks: CRLF and a
// lone CR become LF, a tab becomes four spaces, and every other control
// character goes as Sanitize drops it. It is Sanitize for text that is
// read as lines (a command, a diff); trailing line breaks are dropped.
func Lines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.ReplaceAll(s, "\t", "    ")
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, p := range parts {
		parts[i] = Sanitize(p)
	}
	return strings.Join(parts, "\n")
}

// CutBytes cuts s to at most n bytes at a rune boundary; cut says
// whether anything was left out.
func CutBytes(s string, n int) (out string, cut bool) {
	if len(s) <= n {
		return s, false
	}
	if n <= 0 {
		return "", true
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}
