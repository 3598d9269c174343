package presence

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of ShownNames.
const (
	// MaxShownNames bounds the candidates taken from one text.
	MaxShownNames = 8
	// MaxShownNameBytes bounds one candidate; a longer name is skipped.
	MaxShownNameBytes = 512
	// maxNameWordBytes bounds the <name> word of a projection.
	maxNameWordBytes = 64
)

// Projection prefixes of the session-name projection.
const (
	prefixBlocked = "[BLOCKED] - "
	prefixDone    = "[DONE] - "
	agentWord     = "Agent "
)

// trailing is the punctuation and markup that may follow a name shown in
// prose.
const trailing = ".,;:!?*_`\"'”’)»"

// closers pairs the marks an agent puts around a name with their closing
// mark.
var closers = map[rune]rune{'"': '"', '`': '`', '\'': '\'', '*': '*', '_': '_', '“': '”', '‘': '’', '(': ')', '«': '»'}

// ShownNames returns the session names in the projection pattern that text
// shows (`Agent <name> - <task>`, `[BLOCKED] - Agent <name> - <task>`,
// `[DONE] - Agent <name>[ - <task>]`), at most MaxShownNames of at most
// MaxShownNameBytes each, without duplicates, in order. A name runs to the
// end of its line; when the text puts it inside quotes, backticks or
// emphasis, the candidate that stops at the closing mark is returned too,
// and so is the one without trailing punctuation. Candidates that are not a
// session's name are harmless: the fold takes a seen name only when it is
// the session's own.
func ShownNames(text string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(c string) bool {
		c = strings.TrimRightFunc(c, unicode.IsSpace)
		if c == "" || len(c) > MaxShownNameBytes || !utf8.ValidString(c) || seen[c] {
			return len(out) < MaxShownNames
		}
		seen[c] = true
		out = append(out, c)
		return len(out) < MaxShownNames
	}
	for line := range strings.SplitSeq(text, "\n") {
		for from := 0; from < len(line); {
			i := strings.Index(line[from:], agentWord)
			if i < 0 {
				break
			}
			i += from
			from = i + len(agentWord)
			if i > 0 {
				if r, _ := utf8.DecodeLastRuneInString(line[:i]); unicode.IsLetter(r) || unicode.IsDigit(r) {
					continue
				}
			}
			start, prefixed := i, false
			for _, p := range []string{prefixBlocked, prefixDone} {
				if strings.HasSuffix(line[:i], p) {
					start, prefixed = i-len(p), true
					break
				}
			}
			ok, bare := projection(line[from:min(len(line), from+maxNameWordBytes+8)], prefixed)
			if !ok {
				continue
			}
			// Work per match is bounded: nothing past a name's longest
			// length is read.
			end := min(len(line), start+MaxShownNameBytes+8)
			cand := line[start:end]
			if bare >= 0 {
				cand = line[start : from+bare]
			}
			if !add(cand) || !add(strings.TrimRight(cand, " \t\r"+trailing)) {
				return out
			}
			if start > 0 {
				open, _ := utf8.DecodeLastRuneInString(line[:start])
				if cl, ok := closers[open]; ok {
					if j := strings.IndexRune(line[from:end], cl); j > 0 {
						if !add(line[start : from+j]) {
							return out
						}
					}
				}
			}
		}
	}
	return out
}

// projection reports whether rest, the text after "Agent ", continues a
// projected name: "<name> - <task>", "- <task>" (no name), or, after a
// lifecycle prefix, a bare "<name>". For a bare name, end is where the name
// ends in rest; otherwise it is -1 (the name runs to the end of the line).
func projection(rest string, prefixed bool) (ok bool, end int) {
	if strings.HasPrefix(rest, "- ") {
		return len(rest) > 2, -1
	}
	j := strings.IndexFunc(rest, unicode.IsSpace)
	if j < 0 {
		j = len(rest)
	}
	word := rest[:j]
	if j == len(rest) || !strings.HasPrefix(rest[j:], " - ") {
		// A bare name may end a sentence or a quotation.
		word = strings.TrimRight(word, trailing)
	}
	if word == "" || len(word) > maxNameWordBytes || strings.ContainsFunc(word, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.')
	}) {
		return false, -1
	}
	if strings.HasPrefix(rest[j:], " - ") && len(rest) > j+3 {
		return true, -1
	}
	return prefixed, len(word)
}
