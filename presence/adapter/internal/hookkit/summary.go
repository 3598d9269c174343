package hookkit

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Bounds of a waiting-on summary.
const (
	// MaxSummaryTool bounds the tool name in a summary.
	MaxSummaryTool = 64
	// MaxSummaryPath bounds the path in a summary; a longer one is shown
	// by its base name, or not at all.
	MaxSummaryPath = 96
	// maxCommandWord bounds the command word of a shell summary.
	maxCommandWord = 32
)

// shellTools are the tool names, lower case, whose input is a shell
// command.
var shellTools = map[string]bool{
	"bash": true, "shell": true, "run_shell_command": true, "exec_command": true,
	"local_shell": true, "shell_command": true, "container.exec": true,
}

// Summary is the short, safe description of what a permission request for
// tool waits on, for the summary attribute: the tool, and at most the first
// word of a shell command ("Bash: git") or one file path the input names
// ("Edit src/app.go", relative to cwd when inside it). It never carries
// other tool input. paths, when set, names the files a call writes (the
// adapter's write claims); else file_path or notebook_path is read.
func Summary(cwd, tool string, input json.RawMessage, paths func(string, json.RawMessage) []string) string {
	name := summaryTool(tool)
	if name == "" {
		return ""
	}
	if shellTools[strings.ToLower(tool)] {
		if w := CommandWord(ShellCommand(input)); w != "" {
			return name + ": " + w
		}
		return name
	}
	var p string
	if paths != nil {
		if ps := paths(tool, input); len(ps) > 0 {
			p = ps[0]
		}
	}
	if p == "" {
		var in struct {
			FilePath     any `json:"file_path"`
			NotebookPath any `json:"notebook_path"`
		}
		if json.Unmarshal(input, &in) == nil {
			for _, v := range []any{in.FilePath, in.NotebookPath} {
				if s, ok := v.(string); ok && s != "" {
					p = s
					break
				}
			}
		}
	}
	if s := ShortPath(cwd, p); s != "" {
		return name + " " + s
	}
	return name
}

// summaryTool is tool when it fits a summary, else its first MaxSummaryTool
// bytes (cut at a character).
func summaryTool(tool string) string {
	if !utf8.ValidString(tool) || strings.ContainsFunc(tool, isControl) {
		return ""
	}
	if len(tool) <= MaxSummaryTool {
		return tool
	}
	cut := MaxSummaryTool
	for cut > 0 && !utf8.RuneStart(tool[cut]) {
		cut--
	}
	return tool[:cut]
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// ShellCommand returns the command of a shell tool's input: its command
// field as a string, or the first element of an argv array.
func ShellCommand(input json.RawMessage) string {
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
	if json.Unmarshal(in.Command, &argv) == nil && len(argv) > 0 {
		return argv[0]
	}
	return ""
}

// CommandWord is the program a shell command runs, when it is safe to show:
// the first word, by its base name, made only of letters, digits and
// ".+-_", at most 32 bytes. A first word that sets a variable (FOO=bar, which
// may be a secret) or is anything else gives "".
func CommandWord(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	w := f[0]
	if i := strings.LastIndexByte(w, '/'); i >= 0 {
		w = w[i+1:]
	}
	if w == "" || len(w) > maxCommandWord {
		return ""
	}
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".+-_", r)) {
			return ""
		}
	}
	return w
}

// ShortPath shows p for a summary: relative to cwd when inside it, cleaned,
// and by its base name when longer than MaxSummaryPath. It returns "" for
// an empty path, one with control characters, or one too long even so.
func ShortPath(cwd, p string) string {
	if p == "" || !utf8.ValidString(p) || strings.ContainsFunc(p, isControl) {
		return ""
	}
	p = filepath.Clean(p)
	if cwd != "" && filepath.IsAbs(p) {
		if rel, err := filepath.Rel(filepath.Clean(cwd), p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			p = rel
		}
	}
	if len(p) > MaxSummaryPath {
		p = filepath.Base(p)
	}
	if len(p) > MaxSummaryPath || p == "." || p == string(filepath.Separator) {
		return ""
	}
	return p
}
