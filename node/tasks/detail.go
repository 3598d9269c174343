package tasks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/harn-dev/harn/util/text"
)

// MaxDetail bounds a permission request's detail, in runes: the full
// command a shell tool runs, or the file and diff summary of a file tool.
const MaxDetail = 2048

// Detail is what a tool call does, in full, for the operator who approves
// it: the whole command of a shell tool (Bash), the file and a diff summary
// of a file tool (Edit, Write, MultiEdit: "path (+N/−M lines)"), or the
// call's input as compact JSON for any other tool. It is one line with no
// control characters, at most MaxDetail runes. Unlike Summarize it may hold
// secrets a command carries: it travels only over the mesh's mTLS, to the
// token-protected board and to the webhooks whose detail level is full
// (docs/security.md).
func Detail(tool string, input []byte) string {
	var in map[string]any
	if json.Unmarshal(input, &in) != nil || in == nil {
		return text.Clip(text.OneLine(string(input)), MaxDetail)
	}
	str := func(k string) string { s, _ := in[k].(string); return s }
	var s string
	switch {
	case str("command") != "":
		s = str("command")
	case str("file_path") != "" || str("notebook_path") != "":
		path := str("file_path")
		if path == "" {
			path = str("notebook_path")
		}
		add, del := diffLines(tool, in)
		s = fmt.Sprintf("%s (+%d/−%d lines)", path, add, del)
	default:
		b, _ := json.Marshal(in)
		s = string(b)
	}
	return text.Clip(text.OneLine(s), MaxDetail)
}

// diffLines counts the lines a file tool adds and removes: Write adds its
// content; Edit replaces old_string with new_string; MultiEdit sums its
// edits; NotebookEdit adds new_source.
func diffLines(tool string, in map[string]any) (add, del int) {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	edit := func(m map[string]any) {
		add += lines(str(m, "new_string"))
		del += lines(str(m, "old_string"))
	}
	switch {
	case str(in, "content") != "":
		add = lines(str(in, "content"))
	case str(in, "new_source") != "":
		add = lines(str(in, "new_source"))
	case tool == "MultiEdit":
		es, _ := in["edits"].([]any)
		for _, e := range es {
			if m, ok := e.(map[string]any); ok {
				edit(m)
			}
		}
	default:
		edit(in)
	}
	return add, del
}

func lines(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}
