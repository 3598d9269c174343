package hookkit

import (
	"encoding/json"
	"strings"

	"github.com/harn-dev/harn/presence/adapter"
)

// Describe reads what a call of tool asks (adapter.Describer) by the
// agent's catalog: a tool whose subject is a command (or a known shell
// tool) gives its whole command and the directory it names; a write tool
// whose subject is a path gives the file and its edits (Write's content,
// Edit's old_string and new_string, MultiEdit's edits, NotebookEdit's
// new_source). Any other tool says nothing.
func Describe(cat []adapter.ToolSpec, tool string, input json.RawMessage) adapter.Asked {
	var a adapter.Asked
	spec, _ := lookupSpec(cat, tool)
	var in map[string]json.RawMessage
	if json.Unmarshal(input, &in) != nil {
		return a
	}
	switch {
	case spec.Subject == adapter.SubjectCommand || shellTools[strings.ToLower(tool)]:
		a.Command = FullCommand(input)
		a.Dir = firstString(in, "workdir", "cwd", "dir_path", "directory")
	case spec.Mutates && spec.Subject == adapter.SubjectPath:
		a.Path = firstString(in, "file_path", "notebook_path", "path", "target_file")
		a.Edits = editsOf(in)
	}
	return a
}

// lookupSpec finds tool in cat (a name ending in "*" covers a prefix).
func lookupSpec(cat []adapter.ToolSpec, tool string) (adapter.ToolSpec, bool) {
	for _, s := range cat {
		if s.Name == tool {
			return s, true
		}
	}
	for _, s := range cat {
		if p, ok := strings.CutSuffix(s.Name, "*"); ok && strings.HasPrefix(tool, p) {
			return s, true
		}
	}
	return adapter.ToolSpec{}, false
}

// editsOf reads a write tool's replacements.
func editsOf(in map[string]json.RawMessage) []adapter.Edit {
	var out []adapter.Edit
	if c := firstString(in, "content", "contents", "new_source"); c != "" {
		return []adapter.Edit{{New: c}}
	}
	if old, nw := firstString(in, "old_string"), firstString(in, "new_string"); old != "" || nw != "" {
		out = append(out, adapter.Edit{Old: old, New: nw})
	}
	var edits []map[string]json.RawMessage
	if raw, ok := in["edits"]; ok && json.Unmarshal(raw, &edits) == nil {
		for _, e := range edits {
			old, nw := firstString(e, "old_string"), firstString(e, "new_string")
			if old != "" || nw != "" {
				out = append(out, adapter.Edit{Old: old, New: nw})
			}
		}
	}
	return out
}

// firstString is the first of keys whose value in m is a non-empty
// string.
func firstString(m map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		var s string
		if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// FullCommand is a shell tool's whole command: its command field as a
// string, or an argv array joined as a shell reads it (each word quoted
// when it needs to be).
func FullCommand(input json.RawMessage) string {
	var in struct {
		Command json.RawMessage `json:"command"`
	}
	if json.Unmarshal(input, &in) != nil || len(in.Command) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(in.Command, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(in.Command, &argv) != nil {
		return ""
	}
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = ShellQuote(w)
	}
	return strings.Join(words, " ")
}

// ShellQuote is w as one shell word: as is when it holds only characters
// no shell gives a meaning to, else in single quotes.
func ShellQuote(w string) string {
	if w == "" {
		return "''"
	}
	plain := true
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			plain = false
			break
		}
	}
	if plain {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
