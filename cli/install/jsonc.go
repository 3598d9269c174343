package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// span is a byte range [start, end) of a settings file.
type span struct{ start, end int }

// stripComments blanks the // and /* */ comments of a JSONC file: each
// comment byte becomes a space (newlines stay), so offsets and line
// numbers of the result are those of b. It returns the comments' spans.
func stripComments(b []byte) ([]byte, []span, error) {
	out := bytes.Clone(b)
	var comments []span
	blank := func(s span) {
		for i := s.start; i < s.end; i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
		comments = append(comments, s)
	}
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			end := bytes.IndexByte(b[i:], '\n')
			if end < 0 {
				end = len(b)
			} else {
				end += i
			}
			blank(span{i, end})
			i = end - 1
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return nil, nil, fmt.Errorf("a /* comment is never closed (line %d)", lineOf(b, i))
			}
			end += i + 4
			blank(span{i, end})
			i = end - 1
		}
	}
	return out, comments, nil
}

// spliceHooks writes newTop over the JSONC file orig by replacing only the
// top-level "hooks" value (or inserting it), so that every other byte,
// comments included, stays. clean is orig with its comments blanked and
// old the object it holds. It returns the lines of the comments that lay
// inside the replaced value and are gone.
func spliceHooks(orig, clean []byte, comments []span, old, newTop object) ([]byte, []int, error) {
	for _, m := range newTop {
		if m.key == "hooks" {
			continue
		}
		if v, ok := old.get(m.key); !ok || !bytes.Equal(v, m.val) {
			return nil, nil, fmt.Errorf("settings with comments: only \"hooks\" can be rewritten, and %q changed", m.key)
		}
	}
	hooks, ok := newTop.get("hooks")
	if !ok {
		hooks = json.RawMessage("{}")
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, hooks, "  ", "  "); err != nil {
		return nil, nil, fmt.Errorf("encoding hooks: %w", err)
	}
	val, err := memberSpan(clean, "hooks")
	if err != nil {
		return nil, nil, err
	}
	var out []byte
	var lost []int
	if val.end > 0 {
		for _, c := range comments {
			if c.start >= val.start && c.end <= val.end {
				lost = append(lost, lineOf(orig, c.start))
			}
		}
		out = append(out, orig[:val.start]...)
		out = append(out, ind.Bytes()...)
		out = append(out, orig[val.end:]...)
	} else {
		// Insert after the last member's value, or right after the
		// opening brace of an empty object.
		closing := bytes.LastIndexByte(clean, '}')
		last := len(bytes.TrimRight(clean[:closing], " \t\r\n"))
		ins := []byte("\n  \"hooks\": ")
		if clean[last-1] != '{' {
			ins = append([]byte(","), ins...)
		}
		ins = append(ins, ind.Bytes()...)
		if clean[last-1] == '{' {
			ins = append(ins, '\n')
		}
		out = append(out, orig[:last]...)
		out = append(out, ins...)
		out = append(out, orig[last:]...)
	}
	// The result must read back as exactly the new settings.
	check, _, err := stripComments(out)
	if err == nil {
		var got, want any
		err = errors.Join(json.Unmarshal(check, &got), json.Unmarshal(newTop.raw(), &want))
		if err == nil && !reflect.DeepEqual(got, want) {
			err = errors.New("the rewritten file does not read back as the new settings")
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("settings with comments: %w", err)
	}
	return out, lost, nil
}

// memberSpan finds the value of the top-level member key in a JSON object
// (comments already blanked); end is 0 when the object has no such key.
func memberSpan(clean []byte, key string) (span, error) {
	dec := json.NewDecoder(bytes.NewReader(clean))
	if _, err := dec.Token(); err != nil {
		return span{}, err
	}
	found := span{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return span{}, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return span{}, err
		}
		if k, _ := tok.(string); k == key {
			end := int(dec.InputOffset())
			found = span{end - len(v), end} // a repeated key: the last wins, as in parseObject
		}
	}
	return found, nil
}

// lineOf is the 1-based line of byte offset off in b.
func lineOf(b []byte, off int) int { return bytes.Count(b[:off], []byte("\n")) + 1 }

// lineList writes line numbers as "line 4" or "lines 4, 9".
func lineList(lines []int) string {
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = fmt.Sprint(l)
	}
	if len(s) == 1 {
		return "line " + s[0]
	}
	return "lines " + strings.Join(s, ", ")
}
