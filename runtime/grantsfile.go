package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Bounds of a grants file.
const (
	MaxGrantsFileBytes = 64 << 10
	MaxGrants          = 1024
)

// GrantsFileError names the line of a grants file that is wrong.
type GrantsFileError struct {
	Line int
	Err  error
}

func (e *GrantsFileError) Error() string { return fmt.Sprintf("grants line %d: %v", e.Line, e.Err) }

func (e *GrantsFileError) Unwrap() error { return e.Err }

// ParseGrants reads a grants file (`--grants FILE`). Two forms are
// accepted; a file whose first non-blank byte is `{` is JSON:
//
//	{"version": 1, "profile": "read-only",
//	 "grants": [{"level": "execute", "capability": "Bash", "match": "git *", "confirm": true}]}
//
// Anything else is the line form: one grant per line, blank lines and
// lines starting with # ignored, `profile NAME` adding a named profile:
//
//	profile read-only
//	execute Bash(git *)
//	execute Edit(src/**) confirm
//	activate review
//	inspect mcp__github__*
//
// The line form is LEVEL CAPABILITY[(PATTERN)] [confirm]. The result is the
// grants in file order, profiles expanded.
func ParseGrants(b []byte) ([]Grant, error) {
	if len(b) > MaxGrantsFileBytes {
		return nil, fmt.Errorf("%w: grants file of %d bytes, over %d", ErrTooLarge, len(b), MaxGrantsFileBytes)
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		return parseGrantsJSON(t)
	}
	var out []Grant
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		gs, err := parseGrantLine(line)
		if err != nil {
			return nil, &GrantsFileError{Line: i + 1, Err: err}
		}
		out = append(out, gs...)
		if len(out) > MaxGrants {
			return nil, &GrantsFileError{Line: i + 1, Err: fmt.Errorf("%w: more than %d grants", ErrTooLarge, MaxGrants)}
		}
	}
	if out == nil {
		out = []Grant{}
	}
	return out, nil
}

func parseGrantLine(line string) ([]Grant, error) {
	word, rest, _ := strings.Cut(line, " ")
	if w, r, ok := strings.Cut(line, "\t"); ok && len(w) < len(word) {
		word, rest = w, r
	}
	rest = strings.TrimSpace(rest)
	if word == "profile" {
		return Profile(rest)
	}
	lvl, err := ParseLevel(word)
	if err != nil {
		return nil, err
	}
	if lvl == LevelNone {
		return nil, fmt.Errorf("%w: a grant needs a level above none", ErrGrantSyntax)
	}
	g := Grant{Level: lvl}
	spec, tail := rest, ""
	if open := strings.IndexByte(rest, '('); open >= 0 {
		end := strings.LastIndexByte(rest, ')')
		if end < open {
			return nil, fmt.Errorf("%w: %q opens ( without closing it", ErrGrantSyntax, rest)
		}
		spec, tail = rest[:end+1], strings.TrimSpace(rest[end+1:])
		g.Capability, g.Match = spec[:open], spec[open+1:end]
		if g.Match == "" {
			return nil, fmt.Errorf("%w: empty input pattern in %q", ErrGrantSyntax, spec)
		}
	} else {
		spec, tail, _ = strings.Cut(rest, " ")
		g.Capability, tail = spec, strings.TrimSpace(tail)
	}
	switch tail {
	case "":
	case "confirm":
		g.Confirm = true
	default:
		return nil, fmt.Errorf("%w: unexpected %q after %q; only `confirm` may follow", ErrGrantSyntax, tail, spec)
	}
	if err := g.validate(); err != nil {
		return nil, err
	}
	return []Grant{g}, nil
}

func parseGrantsJSON(b []byte) ([]Grant, error) {
	var f struct {
		Version int     `json:"version"`
		Profile string  `json:"profile"`
		Grants  []Grant `json:"grants"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: grants JSON: %w", ErrGrantSyntax, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: grants JSON: trailing data", ErrGrantSyntax)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("%w: grants JSON version %d; want 1", ErrGrantSyntax, f.Version)
	}
	out := []Grant{}
	if f.Profile != "" {
		p, err := Profile(f.Profile)
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	for i, g := range f.Grants {
		if err := g.validate(); err != nil {
			return nil, fmt.Errorf("grants[%d]: %w", i, err)
		}
	}
	out = append(out, f.Grants...)
	if len(out) > MaxGrants {
		return nil, fmt.Errorf("%w: more than %d grants", ErrTooLarge, MaxGrants)
	}
	return out, nil
}

// FormatGrants writes grants in the line form ParseGrants reads.
func FormatGrants(gs []Grant) []byte {
	var b strings.Builder
	for _, g := range gs {
		b.WriteString(g.Level.String())
		b.WriteByte(' ')
		b.WriteString(g.Capability)
		if g.Match != "" {
			b.WriteString("(" + g.Match + ")")
		}
		if g.Confirm {
			b.WriteString(" confirm")
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}
