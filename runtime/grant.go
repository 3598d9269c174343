package runtime

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// validName reports a capability name or name pattern: printable, valid
// UTF-8, no white space, no parentheses, at most maxNameBytes.
func validName(s string) bool {
	if s == "" || len(s) > maxNameBytes || !utf8.ValidString(s) || strings.ContainsAny(s, "()") {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) < 0
}

// Level is an ordered authority. Tools go discover < inspect < load <
// execute; skills go discover < inspect < activate, where activate is the
// third step (the same value as Load) and the highest a skill can hold.
type Level uint8

// The levels, in order.
const (
	LevelNone Level = iota
	Discover
	Inspect
	Load
	Execute
)

// Activate is a skill's third and highest step.
const Activate = Load

var levelNames = [...]string{"none", "discover", "inspect", "load", "execute"}

func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// nameFor names the level in the vocabulary of the kind.
func (l Level) nameFor(k Kind) string {
	if k == KindSkill && l == Activate {
		return "activate"
	}
	return l.String()
}

// ParseLevel reads a level name (activate is accepted as Load's name for
// skills).
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "none":
		return LevelNone, nil
	case "discover":
		return Discover, nil
	case "inspect":
		return Inspect, nil
	case "load", "activate":
		return Load, nil
	case "execute":
		return Execute, nil
	}
	return 0, fmt.Errorf("%w: unknown level %q; use discover, inspect, load, activate or execute", ErrGrantSyntax, s)
}

// MarshalText writes the level's name.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a level's name.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Grant gives a level of authority over the capabilities whose name matches
// Capability (an exact name, or a pattern where * matches any run of
// characters: "mcp__github__*", "*"). Match, allowed only on execute
// grants, further restricts calls to those whose input subject matches it:
// the command of a shell tool (`git *`, or Claude Code's `git:*`), or the
// path of a file tool (`src/**`). Confirm makes an execute call wait for an
// operator's confirmation.
type Grant struct {
	Level      Level  `json:"level"`
	Capability string `json:"capability"`
	Match      string `json:"match,omitempty"`
	Confirm    bool   `json:"confirm,omitempty"`
}

func (g Grant) validate() error {
	if g.Level == LevelNone || g.Level > Execute {
		return fmt.Errorf("%w: %q has no level", ErrGrantSyntax, g.Capability)
	}
	if !validName(g.Capability) {
		return fmt.Errorf("%w: capability %q must be a name or a name pattern without spaces or parentheses", ErrGrantSyntax, g.Capability)
	}
	if len(g.Capability) > maxNameBytes || len(g.Match) > maxNameBytes {
		return fmt.Errorf("%w: grant longer than %d bytes", ErrGrantSyntax, maxNameBytes)
	}
	if g.Match != "" && g.Level != Execute {
		return fmt.Errorf("%w: an input pattern (%s(%s)) applies to execute grants only", ErrGrantSyntax, g.Capability, g.Match)
	}
	if strings.IndexFunc(g.Match, unicode.IsControl) >= 0 || !utf8.ValidString(g.Match) {
		return fmt.Errorf("%w: input pattern of %q holds a control character or invalid UTF-8", ErrGrantSyntax, g.Capability)
	}
	if g.Confirm && g.Level != Execute {
		return fmt.Errorf("%w: confirm is a condition on an execute grant (%s)", ErrGrantSyntax, g.Capability)
	}
	return nil
}

// Limit caps the level of the capabilities matching Capability (same
// pattern syntax as a grant). Limits are how a task's ceiling shrinks.
type Limit struct {
	Capability string    `json:"capability"`
	Level      Level     `json:"level"`
	Reason     string    `json:"reason,omitempty"`
	At         time.Time `json:"at"`
}

const maxNameBytes = 512

// readOnly is the read-only profile: the reading tools of harn's loop and
// of the agents harn governs, and load of everything else.
var readOnly = []Grant{
	{Level: Execute, Capability: "Read"},
	{Level: Execute, Capability: "Glob"},
	{Level: Execute, Capability: "Grep"},
	{Level: Execute, Capability: "LS"},
	{Level: Execute, Capability: "WebSearch"},
	{Level: Execute, Capability: "TodoWrite"},
	{Level: Execute, Capability: "read_*"},
	{Level: Execute, Capability: "list_*"},
	{Level: Execute, Capability: "glob"},
	{Level: Execute, Capability: "read"},
	{Level: Execute, Capability: "grep"},
	{Level: Execute, Capability: "google_web_search"},
	{Level: Execute, Capability: "search_*"},
	{Level: Execute, Capability: "capabilities_*"},
	{Level: Execute, Capability: "tools_load"},
	{Level: Execute, Capability: "skills_activate"},
	{Level: Load, Capability: "*"},
}

// Profiles are the named grant sets. read-only's grants are in every other
// profile (confirm and edit hold each of them; full's * covers them), so
// that a session of any profile may run a read-only task.
var profiles = map[string][]Grant{
	"read-only": readOnly,
	// confirm reads as read-only does and asks before anything else: every
	// other tool runs once an operator confirms the call (harn task
	// confirm, the TUI's y, the board). It is the default of harn's own
	// agent (harn ask, the TUI).
	"confirm": append(slices.Clone(readOnly), Grant{Level: Execute, Capability: "*", Confirm: true}),
	"edit": {
		{Level: Load, Capability: "*"},
		{Level: Execute, Capability: "Read"},
		{Level: Execute, Capability: "Glob"},
		{Level: Execute, Capability: "Grep"},
		{Level: Execute, Capability: "LS"},
		{Level: Execute, Capability: "WebSearch"},
		{Level: Execute, Capability: "TodoWrite"},
		{Level: Execute, Capability: "Edit"},
		{Level: Execute, Capability: "MultiEdit"},
		{Level: Execute, Capability: "Write"},
		{Level: Execute, Capability: "NotebookEdit"},
		{Level: Execute, Capability: "apply_patch"},
		{Level: Execute, Capability: "google_web_search"},
		{Level: Execute, Capability: "read"},
		{Level: Execute, Capability: "grep"},
		{Level: Execute, Capability: "glob"},
		{Level: Execute, Capability: "write"},
		{Level: Execute, Capability: "edit"},
		{Level: Execute, Capability: "read_*"},
		{Level: Execute, Capability: "list_*"},
		{Level: Execute, Capability: "search_*"},
		{Level: Execute, Capability: "edit_*"},
		{Level: Execute, Capability: "write_*"},
		{Level: Execute, Capability: "capabilities_*"},
		{Level: Execute, Capability: "tools_load"},
		{Level: Execute, Capability: "skills_activate"},
	},
	"full": {
		{Level: Execute, Capability: "*"},
	},
}

// ProfileNames lists the named profiles.
func ProfileNames() []string { return []string{"read-only", "confirm", "edit", "full"} }

// Profile returns a copy of a named profile's grants.
func Profile(name string) ([]Grant, error) {
	g, ok := profiles[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoProfile, name)
	}
	return append([]Grant(nil), g...), nil
}

// nameMatch reports whether a capability name matches a grant or limit
// pattern, where * matches any run of characters.
func nameMatch(pattern, name string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == name
	}
	return globMatch(pattern, name, false)
}

// globMatch matches s against pattern. With paths true, * stops at '/' and
// ** crosses it; otherwise * matches anything. ? matches one character
// (not '/' for paths). It runs in O(len(pattern)·len(s)).
func globMatch(pattern, s string, paths bool) bool {
	type tok struct {
		lit   byte
		kind  uint8 // 0 literal, 1 star, 2 double star, 3 any one
		valid bool
	}
	toks := make([]tok, 0, len(pattern))
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '*' && paths && i+1 < len(pattern) && pattern[i+1] == '*':
			toks = append(toks, tok{kind: 2})
			i++
		case c == '*':
			if paths {
				toks = append(toks, tok{kind: 1})
			} else {
				toks = append(toks, tok{kind: 2})
			}
		case c == '?':
			toks = append(toks, tok{kind: 3})
		default:
			toks = append(toks, tok{kind: 0, lit: c})
		}
	}
	// cur[j]: the first i tokens match s[:j].
	cur := make([]bool, len(s)+1)
	next := make([]bool, len(s)+1)
	cur[0] = true
	for _, t := range toks {
		for j := range next {
			next[j] = false
		}
		switch t.kind {
		case 0:
			for j := 0; j < len(s); j++ {
				if cur[j] && s[j] == t.lit {
					next[j+1] = true
				}
			}
		case 3:
			for j := 0; j < len(s); j++ {
				if cur[j] && !(paths && s[j] == '/') {
					next[j+1] = true
				}
			}
		case 1, 2:
			on := false
			for j := 0; j <= len(s); j++ {
				if cur[j] {
					on = true
				}
				next[j] = on
				if on && j < len(s) && t.kind == 1 && s[j] == '/' {
					on = false
				}
			}
		}
		cur, next = next, cur
	}
	return cur[len(s)]
}

// shellOps are the characters that chain, substitute or redirect in a
// shell. A command holding one never matches an input pattern: `git *`
// must not allow `git status; rm -rf ~`.
const shellOps = ";&|<>`$\n\r(){}"

// matchSubject reports whether a call's input subject matches a grant's
// input pattern, for a capability whose subject is a command or a path.
// Relative path patterns are relative to workdir.
func matchSubject(pattern, subject string, kind Subject, workdir string) bool {
	switch kind {
	case SubjectCommand:
		if subject == "" || strings.ContainsAny(subject, shellOps) {
			return false
		}
		subject = strings.Join(strings.Fields(subject), " ")
		if p, ok := strings.CutSuffix(pattern, ":*"); ok {
			return subject == p || strings.HasPrefix(subject, p+" ")
		}
		return globMatch(pattern, subject, false)
	case SubjectPath:
		if subject == "" {
			return false
		}
		p := subject
		if !strings.HasPrefix(p, "/") && workdir != "" {
			p = path.Join(workdir, p)
		}
		p = path.Clean(p)
		pat := pattern
		if !strings.HasPrefix(pat, "/") {
			if workdir == "" {
				return false
			}
			pat = strings.TrimSuffix(path.Clean(workdir), "/") + "/" + pat
		}
		return globMatch(pat, p, true)
	case SubjectText:
		return subject != "" && globMatch(pattern, subject, false)
	}
	return false
}

// grantMode says how ceiling treats execute grants with an input pattern.
type grantMode uint8

const (
	modeNoCall grantMode = iota // no input: a patterned grant counts as load
	modeCall                    // a call: it counts as execute when its pattern matches the subject
	modeAny                     // any input: it counts as execute
)

// ceiling computes what the grants and limits give over one capability:
// the level, and whether every execute grant that applies asks for a
// confirmation. A patterned execute grant makes the tool usable (load)
// without making every input callable.
func ceiling(grants []Grant, limits []Limit, c *Capability, subject string, mode grantMode, workdir string) (lvl Level, confirm bool) {
	confirmAll := true
	for i := range grants {
		g := &grants[i]
		if !nameMatch(g.Capability, c.Name) {
			continue
		}
		l := g.Level
		if g.Level == Execute && g.Match != "" {
			if mode == modeNoCall || (mode == modeCall && !matchSubject(g.Match, subject, c.Subject, workdir)) {
				l = Load
			}
		}
		if l == Execute {
			if !g.Confirm {
				confirmAll = false
			}
		}
		lvl = max(lvl, l)
	}
	for i := range limits {
		if nameMatch(limits[i].Capability, c.Name) {
			lvl = min(lvl, limits[i].Level)
		}
	}
	if c.Kind == KindSkill {
		lvl = min(lvl, Activate)
	}
	return lvl, lvl == Execute && confirmAll
}
